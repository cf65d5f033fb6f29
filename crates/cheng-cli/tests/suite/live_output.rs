//! `--events`: a node's process output as `output_chunk` lines while it runs, in order, with byte
//! offsets that add up to what the process wrote, also when its output ports were truncated.

use super::support::{cheng, temp_workspace};
use serde_json::{json, Value};

const SHELL: &str = "tools/workspace_shell";
/// Writes about 2 MB to stdout (over workspace_shell's 1 MiB cap) and two parts to stderr.
const SCRIPT: &str = "seq 1 300000; echo err >&2; seq 1 50000 >&2";

fn seq_bytes(n: u64) -> u64 {
    (1..=n).map(|i| i.to_string().len() as u64 + 1).sum()
}

/// The event lines on stderr (the rest are `cheng:` messages).
fn events(stderr: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Checks the output_chunk lines of `node`: contiguous per stream, summing to the bytes written,
/// text equal to the output, all before the node's node_finished. Returns the stdout text.
fn check_chunks(events: &[Value], node: &str) -> String {
    let finished = events
        .iter()
        .position(|e| e["event"] == "node_finished" && e["node"] == node)
        .expect("node_finished");
    let mut texts = [String::new(), String::new()];
    let mut next = [0u64, 0u64];
    for (i, e) in events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == "output_chunk" && e["node"] == node)
    {
        assert!(i < finished, "an output_chunk after node_finished: {e}");
        let s = usize::from(e["stream"] == "stderr");
        assert!(e["stream"] == "stdout" || e["stream"] == "stderr", "{e}");
        assert_eq!(
            e["offset"].as_u64(),
            Some(next[s]),
            "offsets must be contiguous: {e}"
        );
        let text = e["text"].as_str().expect("text");
        assert_eq!(
            e["bytes"].as_u64(),
            Some(text.len() as u64),
            "ASCII output: bytes = text length"
        );
        next[s] += text.len() as u64;
        texts[s].push_str(text);
    }
    assert_eq!(
        next[0],
        seq_bytes(300_000),
        "stdout chunk bytes sum to what was written"
    );
    assert_eq!(
        next[1],
        4 + seq_bytes(50_000),
        "stderr chunk bytes sum to what was written"
    );
    assert!(texts[1].starts_with("err\n1\n2\n"), "{}", &texts[1][..20]);
    texts[0].clone()
}

#[test]
fn cheng_run_events_carry_every_output_byte_in_order() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "sh", "args": ["-c", SCRIPT]}).to_string();
    let out = cheng()
        .args([
            "run",
            SHELL,
            "--workspace",
            ws.to_str().unwrap_or(""),
            "--input",
            &input,
            "--approve",
            "--events",
            "-",
        ])
        .output()
        .expect("cheng runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("result JSON");
    assert_eq!(
        result["stdout_truncated"], true,
        "the output port is head+tail truncated: {}",
        result["stdout_truncated"]
    );
    let events = events(&out.stderr);
    let stdout = check_chunks(&events, SHELL);
    let expected: String = (1..=300_000).map(|i| format!("{i}\n")).collect();
    assert!(
        stdout == expected,
        "the chunks' text is exactly what was written"
    );
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some(json!("graph_finished"))
    );
}

#[test]
fn graph_run_events_carry_output_chunks_per_node() {
    let (dir, ws) = temp_workspace();
    let graph = json!({"version": 1, "nodes": [
        {"id": "loud", "type": SHELL, "inputs": {"command": "sh", "args": ["-c", SCRIPT]}},
        {"id": "quiet", "type": SHELL, "inputs": {"command": "true"}}]});
    let path = dir.path().join("graph.json");
    std::fs::write(&path, graph.to_string()).expect("write graph");
    let out = cheng()
        .args([
            "graph",
            "run",
            path.to_str().unwrap_or(""),
            "--workspace",
            ws.to_str().unwrap_or(""),
            "--approve",
            "--events",
            "jsonl",
        ])
        .output()
        .expect("cheng runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = events(&out.stderr);
    check_chunks(&events, "loud");
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "output_chunk" && e["node"] == "quiet"),
        "`true` writes nothing"
    );
}

#[test]
fn event_lines_hold_no_character_a_terminal_would_act_on() {
    // A purpose (in approval_requested) and the command's output (in output_chunk) carrying
    // escape sequences, C1, bidi and zero-width characters: each line is still the same JSON,
    // written with `\u` escapes, so a terminal showing `--events jsonl` draws them inertly.
    let (_d, ws) = temp_workspace();
    let purpose = "list\u{1b}[3A\r\u{1b}[2K  command:  ls\u{9b}2J\u{202e}\u{200b}\u{7f}";
    let output = "out\u{1b}]0;title\u{7}\u{85}\u{2066}";
    let input = json!({"command": "printf", "args": ["%s", output], "purpose": purpose});
    let out = cheng()
        .args(["run", SHELL, "--workspace", ws.to_str().unwrap()])
        .args(["--input", &input.to_string(), "--approve", "-q"])
        .args(["--events", "jsonl"])
        .output()
        .expect("cheng runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8(out.stderr).expect("UTF-8 events");
    assert!(
        !stderr
            .chars()
            .any(|c| c != '\n' && cheng_node::display::is_hidden(c)),
        "{stderr:?}"
    );
    let events = events(stderr.as_bytes());
    let asked = events
        .iter()
        .find(|e| e["event"] == "approval_requested")
        .expect("approval_requested");
    assert_eq!(asked["request"]["purpose"], purpose);
    let chunks: String = events
        .iter()
        .filter(|e| e["event"] == "output_chunk")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(chunks, output);
    // Positive control: JSON as serde_json writes it would have carried them raw.
    assert!(serde_json::to_string(asked)
        .unwrap()
        .chars()
        .any(cheng_node::display::is_hidden));
}
