//! The sandbox's `console`: log/info/debug/dir write to stdout, warn/error to stderr, each
//! stream kept head+tail within [`STREAM_CAP`] bytes however much the script prints.

use std::cell::RefCell;
use std::rc::Rc;

use cheng_node::text::{Bounded, HeadTail};
use rquickjs::{Ctx, Function, Value};

/// Bytes kept per stream (head and tail halves), as for the process executors.
pub const STREAM_CAP: usize = 1 << 20;

/// Formats arguments like a browser console (strings as they are, other values as JSON, errors
/// with their stack) and clips a single huge message before it leaves the JavaScript heap.
const PRELUDE: &str = r#"(function (write, cap) {
  "use strict";
  const show = (v) => {
    switch (typeof v) {
      case "string": return v;
      case "undefined": return "undefined";
      case "function": return "[Function " + (v.name || "(anonymous)") + "]";
      case "symbol": return v.toString();
      case "bigint": return v.toString() + "n";
      case "object":
        if (v === null) return "null";
        if (v instanceof Error) return v.stack ? v.name + ": " + v.message + "\n" + v.stack : String(v);
        try { const s = JSON.stringify(v, (k, x) => typeof x === "bigint" ? x.toString() + "n" : x); return s === undefined ? String(v) : s; }
        catch (e) { try { return String(v); } catch (e2) { return "[object]"; } }
      default: return String(v);
    }
  };
  const half = Math.floor(cap / 2);
  const emit = (stream) => function (...args) {
    let text = args.map(show).join(" ");
    if (text.length > cap) {
      text = text.slice(0, half) + "\n...[omitted " + (text.length - 2 * half) + " characters]...\n" + text.slice(text.length - half);
    }
    write(stream, text + "\n");
  };
  const console = {
    log: emit(1), info: emit(1), debug: emit(1), dir: emit(1),
    warn: emit(2), error: emit(2),
  };
  Object.defineProperty(globalThis, "console", { value: console, writable: true, enumerable: false, configurable: true });
})"#;

/// The two captured streams, shared by the `console` functions of one run.
#[derive(Clone)]
pub struct Streams(Rc<RefCell<[HeadTail; 2]>>);

impl Streams {
    pub fn new() -> Self {
        Streams(Rc::new(RefCell::new([HeadTail::new(STREAM_CAP), HeadTail::new(STREAM_CAP)])))
    }

    fn push(&self, stream: i32, text: &str) {
        if let Ok(mut streams) = self.0.try_borrow_mut() {
            streams[usize::from(stream == 2)].push(text.as_bytes());
        }
    }

    /// (stdout, stderr).
    pub fn finish(self) -> (Bounded, Bounded) {
        let [out, err] = match Rc::try_unwrap(self.0) {
            Ok(cell) => cell.into_inner(),
            Err(shared) => shared.borrow().clone(),
        };
        (out.finish(), err.finish())
    }
}

/// Defines `console` on the global object.
pub fn install<'js>(ctx: &Ctx<'js>, streams: &Streams) -> rquickjs::Result<()> {
    let sink = streams.clone();
    let write = Function::new(ctx.clone(), move |stream: i32, text: rquickjs::String<'js>| {
        match text.to_string() {
            Ok(text) => sink.push(stream, &text),
            Err(_) => sink.push(stream, "[text that is not valid Unicode]\n"),
        }
    })?;
    let setup: Function = ctx.eval(PRELUDE)?;
    setup.call::<_, ()>((write, STREAM_CAP as i64))
}

/// A thrown value that is not an `Error`, for messages: JSON when possible, else `String(value)`.
pub fn display<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    if let Ok(Some(json)) = ctx.json_stringify(value.clone()) {
        if let Ok(text) = json.to_string() {
            return text;
        }
    }
    // Clear whatever the failed stringify threw so it is not mistaken for a later exception.
    let _ = ctx.catch();
    value
        .get::<rquickjs::Coerced<String>>()
        .map(|s| s.0)
        .unwrap_or_else(|_| format!("a value of type {}", value.type_name()))
}
