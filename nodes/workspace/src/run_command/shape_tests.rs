//! Each level at its budgets: one byte under, exactly at, one byte over, and far over; the
//! markers' N against the bytes really left out; chunk boundaries anywhere.

use super::*;

/// Shapes `stdout` and `stderr` at `level`, fed in chunks of `chunk` bytes.
fn shape(level: Level, stdout: &[u8], stderr: &[u8], chunk: usize) -> Report {
    let shaper = Shaper::new(level, Output::off());
    for piece in stdout.chunks(chunk) {
        shaper.chunk(OutputStream::Stdout, piece, 0);
    }
    for piece in stderr.chunks(chunk) {
        shaper.chunk(OutputStream::Stderr, piece, 0);
    }
    shaper.finish()
}

/// `n` bytes of numbered text (so the kept end is recognisable).
fn text(n: usize) -> Vec<u8> {
    (0..n).map(|i| b"0123456789"[i % 10]).collect()
}

/// The `omitted` marker's N and the text after it.
fn omitted(shaped: &Shaped) -> (u64, &str) {
    let rest = shaped.text.strip_prefix("...[omitted ").expect("marker");
    let (n, kept) = rest.split_once(" bytes]\n").expect("marker end");
    (n.parse().expect("N"), kept)
}

/// Checks a tail cut of `data` at `max`: under and at the budget nothing is cut; over it the
/// marker's N plus the kept bytes are the total, and the kept bytes are the data's end.
fn check_tail(get: impl Fn(&Report) -> &Shaped, level: Level, stdout: bool, max: usize) {
    for n in [max - 1, max, max + 1, 3 * max + 7] {
        let data = text(n);
        for chunk in [1 << 16, 4093] {
            let report = if stdout {
                shape(level, &data, b"", chunk)
            } else {
                shape(level, b"", &data, chunk)
            };
            let shaped = get(&report);
            if n <= max {
                assert!(!shaped.truncated, "{level:?} n={n}");
                assert_eq!(shaped.text.as_bytes(), &data[..], "{level:?} n={n}");
            } else {
                assert!(shaped.truncated, "{level:?} n={n}");
                let (dropped, kept) = omitted(shaped);
                assert_eq!(kept.len(), max, "{level:?} n={n}: the budget is kept");
                assert_eq!(
                    dropped,
                    (n - max) as u64,
                    "{level:?} n={n}: N is what was dropped"
                );
                assert_eq!(kept.as_bytes(), &data[n - max..]);
            }
            let total = if stdout {
                report.stdout_total
            } else {
                report.stderr_total
            };
            assert_eq!(total, n as u64);
        }
    }
}

/// Checks a head cut at `max`: the first `max` bytes, then `...[truncated, N bytes total]`.
fn check_head(get: impl Fn(&Report) -> &Shaped, stdout: bool, max: usize) {
    for n in [max - 1, max, max + 1, 2 * max + 3] {
        let data = text(n);
        let report = if stdout {
            shape(Level::All, &data, b"", 65_536)
        } else {
            shape(Level::All, b"", &data, 65_536)
        };
        let shaped = get(&report);
        if n <= max {
            assert!(!shaped.truncated, "n={n}");
            assert_eq!(shaped.text.as_bytes(), &data[..]);
        } else {
            assert!(shaped.truncated, "n={n}");
            let expected = format!(
                "{}...[truncated, {n} bytes total]",
                String::from_utf8_lossy(&data[..max])
            );
            assert!(shaped.text == expected, "n={n}: the head and the marker");
        }
    }
}

fn stdout(r: &Report) -> &Shaped {
    r.stdout.as_ref().expect("stdout kept at this level")
}

fn stderr(r: &Report) -> &Shaped {
    &r.stderr
}

#[test]
fn info_keeps_the_tails_500_and_100_kib() {
    check_tail(stdout, Level::Info, true, MAX_STDOUT_INFO);
    check_tail(stderr, Level::Info, false, MAX_STDERR_INFO);
    assert_eq!(MAX_STDOUT_INFO, 512_000);
    assert_eq!(MAX_STDERR_INFO, 102_400);
}

#[test]
fn error_drops_stdout_and_keeps_a_100_kib_stderr_tail() {
    check_tail(stderr, Level::Error, false, MAX_ERROR);
    let report = shape(Level::Error, &text(10), b"boom\n", 3);
    assert_eq!(report.stdout, None);
    assert_eq!(report.stdout_total, 10, "what was dropped is still counted");
    assert_eq!(report.stderr.text, "boom\n");
    assert_eq!(report.truncation_note(), None);
}

#[test]
fn warning_keeps_a_100_kib_stderr_tail() {
    check_tail(stderr, Level::Warning, false, MAX_ERROR);
}

#[test]
fn all_keeps_the_heads_1_mb_and_500_kib() {
    check_head(stdout, true, MAX_STDOUT_ALL);
    check_head(stderr, false, MAX_STDERR_ALL);
    assert_eq!(MAX_STDOUT_ALL, 1_000_000);
}

#[test]
fn the_truncation_note_is_infos_and_names_stderrs_size() {
    let report = shape(Level::Info, &text(MAX_STDOUT_INFO + 1), b"e", 65_536);
    assert_eq!(
        report.truncation_note().as_deref(),
        Some("Output was truncated. Use output_level=\"error\" for errors only (1 bytes stderr), or output_level=\"all\" for full output (up to 1MB).")
    );
    let report = shape(Level::Info, b"x", &text(MAX_STDERR_INFO + 1), 65_536);
    assert!(
        report.truncation_note().is_some(),
        "a cut stderr counts too"
    );
    assert_eq!(
        shape(Level::Info, &text(MAX_STDOUT_INFO), b"", 65_536).truncation_note(),
        None
    );
    let over_all = shape(Level::All, &text(MAX_STDOUT_ALL + 1), b"", 65_536);
    assert!(stdout(&over_all).truncated);
    assert_eq!(over_all.truncation_note(), None, "only info has the note");
}

#[test]
fn warning_keeps_only_lines_with_warn_in_any_case() {
    let out =
        b"compiling a\nwarning: unused x\r\nok\nWARN: caps\nforewarned is fine\nbuilt\nlast Warn";
    for chunk in [1, 2, 3, 5, 100] {
        let report = shape(Level::Warning, out, b"", chunk);
        let shaped = stdout(&report);
        assert_eq!(
            shaped.text, "warning: unused x\nWARN: caps\nforewarned is fine\nlast Warn",
            "chunk {chunk}: \\r\\n ends a line like \\n, no newline after the last"
        );
        assert_eq!(report.warning_count, Some(4));
        assert!(!shaped.truncated);
        assert_eq!(report.stdout_total, out.len() as u64);
    }
    let none = shape(Level::Warning, b"all good\n", b"", 4);
    assert_eq!(stdout(&none).text, "");
    assert_eq!(none.warning_count, Some(0));
}

#[test]
fn a_trailing_carriage_return_without_newline_stays() {
    let report = shape(Level::Warning, b"warn\r", b"", 1);
    assert_eq!(stdout(&report).text, "warn\r", "as str::lines leaves it");
}

#[test]
fn warning_lines_are_cut_to_200_kib_at_the_budget_edges() {
    // Matched lines of 1000 bytes (999 + "\n" between them), with noise lines between.
    let line = |i: usize| format!("warn{:0995}", i);
    for lines in [204, 205, 2000] {
        let mut data = Vec::new();
        let mut kept = Vec::new();
        for i in 0..lines {
            data.extend_from_slice(format!("{}\nnoise {i}\n", line(i)).as_bytes());
            kept.push(line(i));
        }
        let filtered = kept.join("\n");
        let report = shape(Level::Warning, &data, b"", 8191);
        let shaped = stdout(&report);
        assert_eq!(report.warning_count, Some(lines as u64));
        if filtered.len() <= MAX_WARNING_STDOUT {
            assert!(!shaped.truncated);
            assert_eq!(shaped.text, filtered);
        } else {
            let (dropped, rest) = omitted(shaped);
            assert_eq!(rest.len(), MAX_WARNING_STDOUT);
            assert_eq!(dropped as usize, filtered.len() - MAX_WARNING_STDOUT);
            assert_eq!(rest, &filtered[filtered.len() - MAX_WARNING_STDOUT..]);
        }
    }
    // Exactly at the budget, one under, one over: a single matched line of that length.
    for n in [
        MAX_WARNING_STDOUT - 1,
        MAX_WARNING_STDOUT,
        MAX_WARNING_STDOUT + 1,
    ] {
        let mut data = b"WARN".to_vec();
        data.extend(text(n - 4));
        data.extend_from_slice(b"\nnoise\n");
        let report = shape(Level::Warning, &data, b"", 65_536);
        let shaped = stdout(&report);
        assert_eq!(shaped.truncated, n > MAX_WARNING_STDOUT, "n={n}");
        if n > MAX_WARNING_STDOUT {
            let (dropped, rest) = omitted(shaped);
            assert_eq!(dropped, 1);
            assert_eq!(rest.as_bytes(), &data[1..n]);
        } else {
            assert_eq!(shaped.text.as_bytes(), &data[..n]);
        }
    }
}

#[test]
fn a_line_far_longer_than_the_budget_is_bounded_and_counted() {
    // 3 MB in one line whose "warn" is at the very end: memory stays bounded (the line's
    // start is never kept), and N counts it.
    let mut data = text(3_000_000);
    data.extend_from_slice(b"wArN\n");
    let report = shape(Level::Warning, &data, b"", 65_536);
    let (dropped, rest) = omitted(stdout(&report));
    assert_eq!(rest.len(), MAX_WARNING_STDOUT);
    assert!(rest.ends_with("wArN"));
    assert_eq!(dropped, 3_000_004 - MAX_WARNING_STDOUT as u64);
}

#[test]
fn cuts_fall_on_character_boundaries_and_n_counts_the_bytes_really_dropped() {
    // "é" is 2 bytes: a tail cut one byte into it drops its other byte too.
    let mut data = b"ab".to_vec();
    data.extend_from_slice("é".as_bytes());
    data.extend(text(MAX_STDOUT_INFO - 1));
    // total = max + 3; the last max bytes start with é's second byte.
    let report = shape(Level::Info, &data, b"", 65_536);
    let (dropped, kept) = omitted(stdout(&report));
    assert!(!kept.contains('\u{FFFD}'), "no character is split");
    assert_eq!(kept.as_bytes(), &text(MAX_STDOUT_INFO - 1)[..]);
    assert_eq!(dropped, 4, "a, b and both bytes of é");

    // A head cut in the middle of "€" (3 bytes) leaves the whole character out.
    let mut data = text(MAX_STDOUT_ALL - 1);
    data.extend_from_slice("€€".as_bytes());
    let report = shape(Level::All, &data, b"", 65_536);
    let shaped = stdout(&report);
    let (head, marker) = shaped.text.split_once("...[truncated").expect("marker");
    assert_eq!(head.len(), MAX_STDOUT_ALL - 1);
    assert!(!head.contains('\u{FFFD}'));
    assert_eq!(marker, format!(", {} bytes total]", MAX_STDOUT_ALL + 5));
}

#[test]
fn invalid_utf8_is_decoded_lossily() {
    let report = shape(Level::Info, b"a\xffb", b"", 1);
    assert_eq!(stdout(&report).text, "a\u{FFFD}b");
}

#[test]
fn levels_parse_from_their_names_only() {
    for name in Level::NAMES {
        assert!(Level::parse(name).is_some());
    }
    assert_eq!(Level::parse("INFO"), None);
    assert_eq!(Level::parse("debug"), None);
}

#[test]
fn chunks_are_passed_on_unchanged() {
    #[derive(Default)]
    struct Keep(std::sync::Mutex<Vec<u8>>);
    impl OutputSink for Keep {
        fn chunk(&self, _: OutputStream, bytes: &[u8], _: u64) {
            self.0.lock().unwrap().extend_from_slice(bytes);
        }
    }
    let keep = std::sync::Arc::new(Keep::default());
    let shaper = Shaper::new(Level::Error, Output::new(keep.clone()));
    shaper.chunk(OutputStream::Stdout, b"dropped here, ", 0);
    shaper.chunk(OutputStream::Stderr, b"seen live", 0);
    assert_eq!(&*keep.0.lock().unwrap(), b"dropped here, seen live");
}
