//! Pathological nesting families for the preview and markdown nodes, shared by
//! `benches/nesting.rs` and `tests/suite/nesting.rs`: each is a generator that fills `bytes`
//! with one shape that drives parsers and tree builders deep (or into quadratic rescans).
#![allow(dead_code)]

/// Makes a family's text of at most the given number of bytes (and close to it).
pub type Generator = fn(usize) -> String;

/// (name, generator).
pub const FAMILIES: &[(&str, Generator)] = &[
    ("blockquote >", |n| ">".repeat(n)),
    ("blockquote > space", |n| "> ".repeat(n / 2)),
    ("blockquote lines", |n| {
        lines(n, |i| format!("{}x\n", ">".repeat(i % 5000)))
    }),
    ("list - inline", |n| format!("{}x", "- ".repeat(n / 2 - 1))),
    ("list indented", |n| {
        lines(n, |i| format!("{}- x\n", "  ".repeat(i % 3000)))
    }),
    ("list ordered inline", |n| "1. ".repeat(n / 3)),
    ("emphasis *", |n| "*".repeat(n)),
    ("emphasis _", |n| "_".repeat(n)),
    ("emphasis **", |n| "**".repeat(n / 2)),
    ("emphasis *a", |n| "*a".repeat(n / 2)),
    ("emphasis open-close", |n| {
        format!("{}x{}", "*a ".repeat(n / 6), " a*".repeat(n / 6))
    }),
    ("brackets [", |n| "[".repeat(n)),
    ("brackets ![", |n| "![".repeat(n / 2)),
    ("brackets (", |n| "(".repeat(n)),
    ("brackets [a](", |n| "[a](".repeat(n / 4)),
    ("brackets [](", |n| {
        format!("{}{}", "[".repeat(n / 2), "]()".repeat(n / 6))
    }),
    ("html <div>", |n| "<div>".repeat(n / 5)),
    ("html <b>", |n| "<b>".repeat(n / 3)),
    ("html <i>", |n| "<i>".repeat(n / 3)),
    ("html <a>", |n| "<a>".repeat(n / 3)),
    ("html <b><i><a>", |n| {
        "<b><i><a href=x><s><u>".repeat(n / 23)
    }),
    ("html <table>", |n| "<table>".repeat(n / 7)),
    ("html <p>", |n| "<p>".repeat(n / 3)),
    ("html <p>x", |n| "<p>x".repeat(n / 4)),
    ("html <b></p>", |n| "<b><p></b></p>".repeat(n / 14)),
    ("html <span>", |n| "<span>".repeat(n / 6)),
    ("html <ul><li>", |n| "<ul><li>".repeat(n / 8)),
    ("html block <div>", |n| lines(n, |_| "<div>\n\n".into())),
    ("refdefs", |n| lines(n, |i| format!("[r{i}]: /u{i}\n"))),
    ("refdefs + uses", |n| {
        let mut s = lines(n / 2, |i| format!("[r{i}]: /u{i}\n"));
        s.push('\n');
        let half = s.len();
        s.push_str(&lines(n - half, |i| format!("[a][r{i}] ")));
        s
    }),
    ("refs undefined", |n| "[a][b] ".repeat(n / 7)),
    ("mixed", |n| "> - *[<div><b>_`".repeat(n / 16)),
    ("mixed lines", |n| {
        lines(n, |i| {
            format!("{}- [*<i>{}\n", "> ".repeat(i % 300), "(".repeat(i % 50))
        })
    }),
];

/// Lines from `line(i)` until the next would pass `bytes`.
fn lines(bytes: usize, mut line: impl FnMut(usize) -> String) -> String {
    let mut out = String::with_capacity(bytes);
    let mut i = 0;
    loop {
        let l = line(i);
        if out.len() + l.len() > bytes {
            return out;
        }
        out.push_str(&l);
        i += 1;
    }
}
