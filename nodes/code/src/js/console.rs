//! The sandbox's `console`: log/info/debug/dir write to stdout, warn/error to stderr, each
//! stream kept head+tail within [`STREAM_CAP`] bytes however much the script prints. Printing a
//! string copies it out of the JavaScript heap once (so at most `memory_mb`); each argument goes
//! to the stream as it is, so the stream alone cuts it and `stdout_bytes`/`stderr_bytes` and the
//! marker's count are exactly what the script printed and what was dropped.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use cheng_node::output::{Output, OutputStream};
use cheng_node::text::{Bounded, HeadTail};
use rquickjs::function::Rest;
use rquickjs::{Coerced, Ctx, Function, Object, Type, Value};

/// Bytes kept per stream (head and tail halves), as for the process executors.
pub const STREAM_CAP: usize = 1 << 20;

/// The two captured streams, shared by the `console` functions of one run, and the run's live
/// output handle (each printed piece is passed on as it is printed, with its byte offset). Made
/// with the spare context the console is installed in, before the run (and its output handle)
/// is known: the run hands its output over with [`Streams::set_output`].
#[derive(Clone)]
pub struct Streams(Rc<RefCell<[HeadTail; 2]>>, Rc<Live>);

struct Live {
    output: RefCell<Output>,
    offsets: [Cell<u64>; 2],
}

impl Streams {
    pub fn new(output: Output) -> Self {
        let live = Live {
            output: RefCell::new(output),
            offsets: [Cell::new(0), Cell::new(0)],
        };
        Streams(
            Rc::new(RefCell::new([
                HeadTail::new(STREAM_CAP),
                HeadTail::new(STREAM_CAP),
            ])),
            Rc::new(live),
        )
    }

    /// Where printed pieces go live from now on.
    pub fn set_output(&self, output: Output) {
        if let Ok(mut slot) = self.1.output.try_borrow_mut() {
            *slot = output;
        }
    }

    fn push(&self, stream: i32, text: &str) {
        let index = usize::from(stream == 2);
        if let Ok(mut streams) = self.0.try_borrow_mut() {
            streams[index].push(text.as_bytes());
        }
        let live = &self.1;
        let Ok(output) = live.output.try_borrow() else {
            return;
        };
        if output.is_on() {
            let which = if index == 1 {
                OutputStream::Stderr
            } else {
                OutputStream::Stdout
            };
            let offset = live.offsets[index].get();
            output.chunk(which, text.as_bytes(), offset);
            live.offsets[index].set(offset + text.len() as u64);
        }
    }

    /// (stdout, stderr). The console functions may still hold the streams (their runtime is
    /// freed after the answer has gone out): what was printed is taken out of them.
    pub fn finish(self) -> (Bounded, Bounded) {
        let [out, err] = match Rc::try_unwrap(self.0) {
            Ok(cell) => cell.into_inner(),
            Err(shared) => match shared.try_borrow_mut() {
                Ok(mut streams) => {
                    std::mem::replace(&mut *streams, [HeadTail::new(0), HeadTail::new(0)])
                }
                Err(_) => shared.borrow().clone(),
            },
        };
        (out.finish(), err.finish())
    }
}

/// Defines `console` on the global object (native functions: nothing to parse per run).
pub fn install<'js>(ctx: &Ctx<'js>, streams: &Streams) -> rquickjs::Result<()> {
    let console = Object::new(ctx.clone())?;
    for (name, stream) in [
        ("log", 1),
        ("info", 1),
        ("debug", 1),
        ("dir", 1),
        ("warn", 2),
        ("error", 2),
    ] {
        let sink = streams.clone();
        let function = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            // Argument by argument: a huge one is not copied again into a line first.
            for (i, value) in args.0.iter().enumerate() {
                if i > 0 {
                    sink.push(stream, " ");
                }
                sink.push(stream, &show(&ctx, value));
            }
            sink.push(stream, "\n");
        })?
        .with_name(name)?;
        console.set(name, function)?;
    }
    ctx.globals().set("console", console)
}

/// One console argument as text: strings as they are, errors with their stack, other objects as
/// JSON (falling back to `String(value)`), like a browser console.
fn show<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    match value.type_of() {
        Type::Uninitialized | Type::Undefined => "undefined".to_string(),
        Type::Null => "null".to_string(),
        Type::String => value
            .as_string()
            .and_then(|s| s.to_string().ok())
            .unwrap_or_else(|| "[text that is not valid Unicode]".into()),
        Type::BigInt => format!("{}n", coerce(value)),
        Type::Symbol => match value
            .as_symbol()
            .and_then(|s| s.description().ok())
            .and_then(|d| d.as_string().and_then(|s| s.to_string().ok()))
        {
            Some(description) => format!("Symbol({description})"),
            None => "Symbol()".to_string(),
        },
        Type::Function | Type::Constructor => {
            let name = value
                .as_object()
                .and_then(|o| o.get::<_, Option<String>>("name").ok().flatten())
                .filter(|n| !n.is_empty());
            format!("[Function {}]", name.as_deref().unwrap_or("(anonymous)"))
        }
        _ if value.is_error() => {
            let object = value.as_object();
            let get = |key: &str| {
                object
                    .and_then(|o| o.get::<_, Option<Coerced<String>>>(key).ok().flatten())
                    .map(|s| s.0)
            };
            let head = format!(
                "{}: {}",
                get("name").unwrap_or_else(|| "Error".into()),
                get("message").unwrap_or_default()
            );
            match get("stack").filter(|s| !s.is_empty()) {
                Some(stack) => format!("{head}\n{}", stack.trim_end()),
                None => head,
            }
        }
        Type::Object | Type::Array | Type::Proxy | Type::Promise | Type::Exception => {
            match ctx.json_stringify(value.clone()) {
                Ok(Some(json)) => json.to_string().unwrap_or_else(|_| coerce(value)),
                Ok(None) => coerce(value),
                Err(_) => {
                    // A cycle or a BigInt inside: say what it is instead.
                    let _ = ctx.catch();
                    coerce(value)
                }
            }
        }
        _ => coerce(value),
    }
}

/// `String(value)`, or a description when even that throws.
fn coerce<'js>(value: &Value<'js>) -> String {
    match value.get::<Coerced<String>>() {
        Ok(text) => text.0,
        Err(_) => {
            let _ = value.ctx().catch();
            format!("[{}]", value.type_name())
        }
    }
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
