//! Properties the fuzzer checks (fuzz/fuzz_targets/): each function takes the fuzzer's bytes
//! and panics when a property does not hold. The ordinary tests run the checked-in seeds of
//! every target through the same functions.

use crate::skills::{
    check_skill_name, frontmatter, one_line, MAX_DESCRIPTION_CHARS, MAX_FRONTMATTER_EXPANDED,
    MAX_YAML_ERROR_CHARS,
};

/// The longest a frontmatter problem may be, in characters (its own words and a quoted YAML
/// error).
const MAX_PROBLEM_CHARS: usize = MAX_YAML_ERROR_CHARS + 120;

/// SKILL.md frontmatter. Input: the file (text that does not start with `---` is wrapped in
/// `---` lines, so it is read as the frontmatter). No panic; a refusal is bounded and holds no
/// control character; a name and a description are text within the expansion bound; the
/// catalogue's line of the description is one line within its limit; a name is accepted or
/// refused without a panic.
pub fn skill_frontmatter(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let content = if text.starts_with("---") {
        text.into_owned()
    } else {
        format!("---\n{text}\n---\n")
    };
    match frontmatter(&content) {
        Err(problem) => {
            assert!(
                problem.chars().count() <= MAX_PROBLEM_CHARS,
                "a {}-character problem",
                problem.chars().count()
            );
            assert!(
                !problem.chars().any(char::is_control),
                "a control character in {problem:?}"
            );
        }
        Ok((name, description)) => {
            for field in [&name, &description].into_iter().flatten() {
                assert!(
                    field.len() <= MAX_FRONTMATTER_EXPANDED,
                    "a {}-byte field",
                    field.len()
                );
            }
            if let Some(name) = name {
                let _ = check_skill_name(&name);
            }
            let line = one_line(&description.unwrap_or_default());
            assert!(
                line.chars().count() <= MAX_DESCRIPTION_CHARS + 1,
                "a {}-character description",
                line.chars().count()
            );
            assert!(
                !line.chars().any(|c| c.is_control() || c == '\n'),
                "{line:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_seeds_hold_the_properties() {
        cheng_test_support::check_fuzz_seeds(&[("skill_frontmatter", super::skill_frontmatter)]);
    }
}
