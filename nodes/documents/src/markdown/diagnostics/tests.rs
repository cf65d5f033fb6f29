use super::*;

fn rules_of(text: &str) -> Vec<(&'static str, usize, usize)> {
    let doc = Document::parse(text);
    check(&doc, None)
        .0
        .iter()
        .map(|d| (d.rule, d.line, d.column))
        .collect()
}

#[test]
fn two_trailing_spaces_are_a_line_break_not_a_finding() {
    assert_eq!(rules_of("a  \nb\n"), []);
    assert_eq!(
        rules_of("a \nb\t\n"),
        [
            (rules::TRAILING_WHITESPACE, 1, 2),
            (rules::TRAILING_WHITESPACE, 2, 2)
        ]
    );
    assert_eq!(rules_of("```text\na   \n```\n"), []);
}

#[test]
fn blank_runs_report_each_extra_line() {
    assert_eq!(
        rules_of("a\n\n\n\nb\n"),
        [
            (rules::MULTIPLE_BLANKS, 3, 1),
            (rules::MULTIPLE_BLANKS, 4, 1)
        ]
    );
    assert_eq!(rules_of("a\n\n"), [(rules::MULTIPLE_BLANKS, 3, 1)]);
    assert_eq!(rules_of("```text\n\n\n\n```\n"), []);
}

#[test]
fn heading_rules_follow_markdownlint() {
    let found = rules_of("# A\n## B\n\n#### C\n\n# A\n");
    assert!(found.contains(&(rules::BLANKS_AROUND_HEADINGS, 1, 1)));
    assert!(found.contains(&(rules::BLANKS_AROUND_HEADINGS, 2, 1)));
    assert!(found.contains(&(rules::HEADING_JUMP, 4, 1)));
    assert!(found.contains(&(rules::DUPLICATE_HEADING, 6, 1)));
    assert!(found.contains(&(rules::MULTIPLE_H1, 6, 1)));
    // A document whose first heading is an h2 may use several h1s.
    assert!(!rules_of("## A\n\n# B\n\n# C\n")
        .iter()
        .any(|f| f.0 == rules::MULTIPLE_H1));
}

#[test]
fn the_second_thread_changes_nothing() {
    // Every rule with a fix, several on the same lines, with a heading whose blank line
    // above and trailing whitespace land on neighbouring lines.
    let mut text = String::from("# Top\n");
    for i in 0..200 {
        text.push_str(&format!("para {i} https://x.example/{i}   \n\n\n\n## Head {i}  \ntext [a](#Head-{i}) \n```\ncode   \n```\n"));
    }
    text.push_str("# Top\nend");
    let doc = Document::parse(&text);
    let (found_seq, plan_seq) = check_with(&doc, Some(3), false);
    let (found_par, plan_par) = check_with(&doc, Some(3), true);
    assert!(found_seq.len() > 1000, "{}", found_seq.len());
    assert_eq!(found_seq, found_par);
    assert_eq!(
        format!("{:?}", plan_seq.lines),
        format!("{:?}", plan_par.lines)
    );
    assert_eq!(
        format!("{:?}", plan_seq.inserts),
        format!("{:?}", plan_par.inserts)
    );
    assert_eq!(plan_seq.covered, plan_par.covered);
    let seq = crate::markdown::suggestions::build(&text, "a.md", &plan_seq, usize::MAX);
    let par = crate::markdown::suggestions::build(&text, "a.md", &plan_par, usize::MAX);
    assert_eq!(seq, par);
}

#[test]
fn percent_decoding_handles_edges() {
    assert_eq!(percent_decode("caf%C3%A9"), "café");
    assert_eq!(percent_decode("100%"), "100%");
    assert_eq!(percent_decode("%zz"), "%zz");
}
