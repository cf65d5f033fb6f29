use super::*;

fn input(value: Value) -> Values {
    value.as_object().cloned().unwrap_or_default()
}

#[test]
fn empty_or_unknown_operation_lists_the_choices() {
    for op in ["", "push", "reset"] {
        let err = parse_request(&input(json!({"operation": op})))
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(
            err.message.contains("status, diff, log, show, branch"),
            "{}",
            err.message
        );
    }
}

#[test]
fn max_count_over_the_limit_cites_the_max() {
    let err = parse_request(&input(json!({"operation": "log", "max_count": 101})))
        .err()
        .unwrap();
    assert!(err.message.contains("maximum 100"), "{}", err.message);
    assert!(parse_request(&input(json!({"operation": "log", "max_count": 100}))).is_ok());
}

#[test]
fn spec_ports_follow_the_reference_page() {
    assert_eq!(SPEC.input("max_count").and_then(|p| p.max), Some(100));
    // Required (the reference page's `""` default names no operation), so a missing one fails validation.
    assert!(SPEC
        .input("operation")
        .is_some_and(|p| p.required && p.default.is_none()));
    assert_eq!(SPEC.effects, Effects::ReadOnly);
    let names: Vec<_> = SPEC.outputs.iter().map(|p| p.name).collect();
    assert_eq!(names.len(), 13);
}

#[test]
fn kept_records_drop_the_partial_tail() {
    let bounded = cheng_node::text::head_tail(b"one\ntwo\nthree\nfour\nfive\nsix\n", 12);
    assert!(bounded.truncated);
    assert_eq!(kept_records(&bounded, '\n'), "one\n");
    assert_eq!(
        kept_raw_records(b"one\0tw\xffo\0thr", true),
        b"one\0tw\xffo\0"
    );
    assert_eq!(kept_raw_records(b"one\0thr", false), b"one\0thr");
    assert_eq!(kept_raw_records(b"partial", true), b"");
}
