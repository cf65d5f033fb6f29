//! Properties the fuzzer checks (fuzz/fuzz_targets/): each function takes the fuzzer's bytes
//! and panics when a property does not hold. The ordinary tests run the checked-in seeds of
//! every target through the same functions.

use crate::transport::{LineTransport, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR};
use rmcp::model::JsonRpcMessage;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

/// The stdio line reader. Input: a byte choosing the read buffer's size (1 to 256), a byte
/// choosing the line cap (64 to 4 144 bytes), then the stream. Every complete line within the
/// cap comes out whole and in order, and parses to a message or is answered with one JSON-RPC
/// error, or is skipped as documented (blank; a JSON object that is neither a request nor
/// lacking both `id` and `method`); an unterminated last line is dropped; a line over the cap
/// gets one `-32600` and nothing of it comes out; every reply is one line of JSON-RPC error.
pub fn mcp_line(data: &[u8]) {
    let [buffer, cap, stream @ ..] = data else {
        return;
    };
    let buffer = usize::from(*buffer) + 1;
    let max = 64 + usize::from(*cap) * 16;

    // What the reader must yield: the terminated segments within the cap; and one refusal per
    // segment (terminated or not) over it.
    let mut segments: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    let last = segments.pop().unwrap_or_default();
    let mut expected = Vec::new();
    let mut refusals = usize::from(last.len() > max);
    for segment in segments {
        if segment.len() > max {
            refusals += 1;
        } else {
            expected.push(segment.to_vec());
        }
    }

    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(e) => panic!("no runtime: {e}"),
    };
    let reader = tokio::io::BufReader::with_capacity(buffer, std::io::Cursor::new(stream.to_vec()));
    let (mut transport, mut replies) = LineTransport::in_memory(reader, max);
    let mut lines = Vec::new();
    let mut refused = 0;
    runtime.block_on(async {
        loop {
            let line = transport.next_line().await;
            for reply in drain(&mut replies) {
                let (id, code) = error_reply(&reply);
                assert_eq!(id, Value::Null, "a refusal names no request");
                assert_eq!(code, INVALID_REQUEST, "a refusal is -32600");
                refused += 1;
            }
            let Some(line) = line else { break };
            assert!(
                line.len() <= max,
                "a {}-byte line past a {max}-byte cap",
                line.len()
            );
            let message = transport.parse(&line);
            let answers = drain(&mut replies);
            assert!(answers.len() <= 1, "{} replies to one line", answers.len());
            check_line(&line, message.as_ref(), answers.first());
            lines.push(line);
        }
    });
    assert_eq!(lines, expected, "the lines read differ from the lines sent");
    assert_eq!(refused, refusals, "refusals of oversized lines");
}

/// Every message sent so far.
fn drain(replies: &mut UnboundedReceiver<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Ok(reply) = replies.try_recv() {
        out.push(reply);
    }
    out
}

/// A reply is one line holding a JSON-RPC error: its id and code.
fn error_reply(reply: &[u8]) -> (Value, i64) {
    let Some(body) = reply.strip_suffix(b"\n") else {
        panic!(
            "a reply does not end its line: {:?}",
            String::from_utf8_lossy(reply)
        );
    };
    assert!(!body.contains(&b'\n'), "a reply spans lines");
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => panic!(
            "a reply is not JSON ({e}): {:?}",
            String::from_utf8_lossy(body)
        ),
    };
    assert_eq!(value["jsonrpc"], "2.0", "{value}");
    let code = value["error"]["code"].as_i64();
    let Some(code) = code else {
        panic!("a reply without an error code: {value}")
    };
    assert!(value["error"]["message"].is_string(), "{value}");
    (value["id"].clone(), code)
}

/// One line's outcome: a message, one error reply, or a documented skip.
fn check_line(line: &[u8], message: Option<&crate::transport::RxMessage>, reply: Option<&Vec<u8>>) {
    let text = line
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let value: Option<Value> = serde_json::from_slice(text).ok();
    let id = value.as_ref().and_then(|v| v.get("id")).cloned();
    let has_method = value
        .as_ref()
        .and_then(|v| v.get("method"))
        .is_some_and(Value::is_string);
    match (message, reply) {
        (Some(_), Some(_)) => panic!("a message and a reply for one line"),
        (Some(message), None) => {
            if let Err(e) = serde_json::to_value(message) {
                panic!("a parsed message does not serialise: {e}");
            }
            if let JsonRpcMessage::Request(request) = message {
                assert!(has_method, "a request from a line without a method");
                let read = serde_json::to_value(&request.id).ok();
                // A number is the same id in any spelling: rmcp reads `11.0` as 11 (and writes
                // 11 back, which a client compares equal).
                let same = match (&read, &id) {
                    (Some(Value::Number(a)), Some(Value::Number(b))) => a.as_f64() == b.as_f64(),
                    _ => read == id,
                };
                assert!(
                    same,
                    "the request id {read:?} differs from the line's {id:?}"
                );
            }
        }
        (None, Some(reply)) => {
            let (reply_id, code) = error_reply(reply);
            assert!(
                [PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS].contains(&code),
                "code {code}"
            );
            if code == PARSE_ERROR {
                assert!(value.is_none(), "valid JSON answered as a parse error");
            }
            if !reply_id.is_null() {
                assert_eq!(Some(reply_id), id, "the reply names another request");
            }
        }
        (None, None) => {
            let blank = text.iter().all(u8::is_ascii_whitespace);
            let object = value.as_ref().is_some_and(Value::is_object);
            assert!(
                blank || (object && !(id.is_some() && has_method)),
                "a line neither read, answered nor documented as skipped: {:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_seeds_hold_the_properties() {
        cheng_test_support::check_fuzz_seeds(&[("mcp_line", super::mcp_line)]);
    }
}
