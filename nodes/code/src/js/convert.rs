//! JavaScript value → JSON, with errors that name the path of what could not be converted.
//!
//! Follows `JSON.stringify` where JSON can represent the value (`NaN`/`Infinity` → `null`,
//! `toJSON` honoured, `undefined` omitted from objects and `null` in arrays) and fails where
//! `JSON.stringify` would silently drop or mangle data: functions, symbols, cycles, promises,
//! `Map`/`Set`, nesting deeper than [`MAX_DEPTH`]. `BigInt` becomes its decimal string; an `Error` becomes `{name, message}`.
//!
//! Size: the converted value must fit the memory_mb budget (an estimate of its size in memory)
//! and its compact JSON text the result limit ([`crate::result::RESULT_LIMIT_BYTES`]). While
//! walking, a lower bound of the JSON size is kept, and a string's length is read before its
//! text is copied out of the JavaScript heap, so a huge result fails before it is copied;
//! [`json_len_within`] then measures the exact size of what was converted.

use std::time::Instant;

use rquickjs::{Array, Ctx, Object, Type, Value};
use serde_json::{Map, Number};

/// Deepest nesting converted; deeper values fail instead of exhausting the native stack. The
/// same depth serde_json (and so every cheng reader) accepts when parsing.
pub const MAX_DEPTH: usize = 128;
/// Largest integer a JSON number carries exactly (2^53).
const MAX_SAFE: f64 = 9_007_199_254_740_992.0;

#[derive(Debug)]
pub enum Error {
    /// The value has a shape JSON cannot carry; the message names the path.
    Shape(String),
    /// The result is larger than the budget or the result limit; the message names which.
    TooLarge(String),
    /// The deadline passed while converting.
    Deadline,
    /// JavaScript ran during conversion (a getter, `toJSON`, a proxy trap) and threw.
    Js(rquickjs::Error),
}

impl From<rquickjs::Error> for Error {
    fn from(e: rquickjs::Error) -> Self {
        Error::Js(e)
    }
}

/// Converts `value` (the script's result) to JSON. `budget` bounds the estimated size in bytes of
/// the converted value so a huge result cannot take unbounded memory outside the JavaScript heap.
///
/// The walk is iterative (an explicit stack of containers): its native stack use does not grow
/// with the nesting of the value, whatever the build profile.
pub fn to_json<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    budget: usize,
    deadline: Instant,
) -> Result<serde_json::Value, Error> {
    let globals = ctx.globals();
    let mut walker = Walker {
        ctx: ctx.clone(),
        stack: Vec::new(),
        map: globals.get("Map").ok(),
        set: globals.get("Set").ok(),
        budget,
        limit: budget,
        json_left: crate::result::RESULT_LIMIT_BYTES,
        steps: 0,
        deadline,
    };
    walker.run(value)
}

/// The length of `value`'s compact JSON text when it is at most `limit` bytes; `None` beyond
/// (the serialisation stops at the first byte past the limit, and nothing is kept).
pub fn json_len_within(value: &serde_json::Value, limit: usize) -> Option<usize> {
    struct Counter {
        len: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.len += buf.len();
            if self.len > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { len: 0, limit };
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.len)
}

/// The error for a result past the result limit.
pub fn too_large_for_the_limit(size: &str) -> Error {
    Error::TooLarge(crate::result::too_large(
        size,
        "return less data, or split the work across several runs",
    ))
}

/// Where a container is in its parent: `.key` or `[index]`.
enum Segment {
    Key(String),
    Index(u32),
}

/// A container being converted.
struct Frame<'js> {
    /// The container itself, for cycle detection.
    value: Value<'js>,
    /// The child being converted now.
    current: Option<Segment>,
    kind: FrameKind<'js>,
}

enum FrameKind<'js> {
    Array {
        array: Array<'js>,
        len: usize,
        next: usize,
        items: Vec<serde_json::Value>,
    },
    Object {
        object: Object<'js>,
        keys: std::vec::IntoIter<String>,
        map: Map<String, serde_json::Value>,
    },
}

impl<'js> Frame<'js> {
    /// Stores the converted current child (`None` is `undefined`: omitted from objects).
    fn accept(&mut self, child: Option<serde_json::Value>) {
        match (&mut self.kind, self.current.take()) {
            (FrameKind::Array { items, .. }, _) => {
                items.push(child.unwrap_or(serde_json::Value::Null))
            }
            (FrameKind::Object { map, .. }, Some(Segment::Key(key))) => {
                if let Some(child) = child {
                    map.insert(key, child);
                }
            }
            (FrameKind::Object { .. }, _) => {}
        }
    }

    /// The next child to convert, or `None` when the container is complete.
    fn next_child(&mut self) -> rquickjs::Result<Option<Value<'js>>> {
        match &mut self.kind {
            FrameKind::Array {
                array, len, next, ..
            } => {
                if *next >= *len {
                    return Ok(None);
                }
                let item = array.get(*next)?;
                self.current = Some(Segment::Index(*next as u32));
                *next += 1;
                Ok(Some(item))
            }
            FrameKind::Object { object, keys, .. } => match keys.next() {
                None => Ok(None),
                Some(key) => {
                    let item = object.get(key.as_str())?;
                    self.current = Some(Segment::Key(key));
                    Ok(Some(item))
                }
            },
        }
    }

    fn finish(self) -> serde_json::Value {
        match self.kind {
            FrameKind::Array { items, .. } => serde_json::Value::Array(items),
            FrameKind::Object { map, .. } => serde_json::Value::Object(map),
        }
    }
}

/// What converting one value gives: a finished JSON value (`None` is `undefined`) or a container
/// whose children come next.
enum Start<'js> {
    Leaf(Option<serde_json::Value>),
    Container(Frame<'js>),
}

struct Walker<'js> {
    ctx: Ctx<'js>,
    stack: Vec<Frame<'js>>,
    map: Option<Value<'js>>,
    set: Option<Value<'js>>,
    budget: usize,
    limit: usize,
    /// What is left of the result limit for a lower bound of the JSON text's size.
    json_left: usize,
    steps: u64,
    deadline: Instant,
}

impl<'js> Walker<'js> {
    fn run(&mut self, root: Value<'js>) -> Result<serde_json::Value, Error> {
        let mut pending = root;
        loop {
            let mut done = match self.start(pending)? {
                Start::Leaf(json) => Some(json),
                Start::Container(frame) => {
                    self.stack.push(frame);
                    None
                }
            };
            // Hand finished values up and find the next child to convert.
            loop {
                if let Some(json) = done.take() {
                    match self.stack.last_mut() {
                        None => return Ok(json.unwrap_or(serde_json::Value::Null)),
                        Some(parent) => parent.accept(json),
                    }
                }
                let Some(top) = self.stack.last_mut() else {
                    return Ok(serde_json::Value::Null);
                };
                match top.next_child()? {
                    Some(child) => {
                        pending = child;
                        break;
                    }
                    None => {
                        let finished = self.stack.pop().map(Frame::finish);
                        done = Some(finished);
                    }
                }
            }
        }
    }

    fn start(&mut self, value: Value<'js>) -> Result<Start<'js>, Error> {
        self.steps += 1;
        if self.steps & 4095 == 0 && Instant::now() >= self.deadline {
            return Err(Error::Deadline);
        }
        self.charge(16)?;
        // Every value but `undefined` is at least one byte of JSON (a string more, see below).
        if !matches!(value.type_of(), Type::Uninitialized | Type::Undefined)
            && self.json(1).is_err()
        {
            return Err(self.over_json_limit(None));
        }
        let json = match value.type_of() {
            Type::Uninitialized | Type::Undefined => return Ok(Start::Leaf(None)),
            Type::Null => serde_json::Value::Null,
            Type::Bool => serde_json::Value::Bool(value.as_bool().unwrap_or(false)),
            Type::Int => serde_json::Value::from(value.as_int().unwrap_or(0)),
            Type::Float => number(value.as_float().unwrap_or(f64::NAN)),
            Type::String => {
                let Some(string) = value.as_string() else { return Err(self.shape("could not be read as a string")) };
                // The UTF-8 length without copying the text out of the heap (QuickJS lends an
                // ASCII string's own bytes): escapes only add to it, so it bounds the JSON size.
                let len = string.clone().to_cstring()?.len();
                if self.json(len.saturating_add(1)).is_err() {
                    return Err(self.over_json_limit(Some(len)));
                }
                self.charge(len)?;
                let text = string
                    .to_string()
                    .map_err(|_| self.shape("contains text that is not valid Unicode (a lone surrogate)"))?;
                serde_json::Value::String(text)
            }
            Type::BigInt => {
                let text = value.get::<rquickjs::Coerced<String>>()?.0;
                self.charge(text.len())?;
                serde_json::Value::String(text)
            }
            Type::Symbol => return Err(self.shape("is a symbol, which JSON cannot represent")),
            Type::Function | Type::Constructor => {
                let name = value
                    .as_object()
                    .and_then(|o| o.get::<_, Option<String>>("name").ok().flatten())
                    .filter(|n| !n.is_empty())
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                return Err(self.shape(&format!("is a function{name}; return data, not code")));
            }
            Type::Promise => {
                return Err(self.shape(
                    "is a promise; only the final value itself is awaited, so await this one inside the script",
                ))
            }
            Type::Array | Type::Object | Type::Exception | Type::Proxy => return self.container(value, false),
            other => return Err(self.shape(&format!("is a {} value, which JSON cannot represent", other.as_str()))),
        };
        Ok(Start::Leaf(Some(json)))
    }

    fn container(&mut self, value: Value<'js>, after_to_json: bool) -> Result<Start<'js>, Error> {
        let Some(object) = value.as_object().cloned() else {
            return Err(self.shape("could not be read as an object"));
        };
        if self.stack.iter().any(|frame| frame.value == value) {
            return Err(self.shape(
                "refers back to one of its containers (a cycle), which JSON cannot represent",
            ));
        }
        if !after_to_json {
            if let Ok(to_json) = object.get::<_, rquickjs::Function>("toJSON") {
                let key = match self.stack.last().and_then(|f| f.current.as_ref()) {
                    Some(Segment::Key(k)) => k.clone(),
                    Some(Segment::Index(i)) => i.to_string(),
                    None => String::new(),
                };
                let replaced: Value = to_json.call((rquickjs::function::This(object), key))?;
                // Like JSON.stringify, the replacement itself is not asked for toJSON again.
                return match replaced.type_of() {
                    Type::Array | Type::Object | Type::Exception | Type::Proxy => {
                        self.container(replaced, true)
                    }
                    _ => self.start(replaced),
                };
            }
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.shape(&format!("is nested deeper than {MAX_DEPTH} levels")));
        }
        for (class, hint) in [
            (
                &self.map,
                "a Map: return Object.fromEntries(map) or [...map]",
            ),
            (&self.set, "a Set: return [...set]"),
        ] {
            let is_instance = class.as_ref().is_some_and(|c| object.is_instance_of(c));
            // `instanceof` can throw (a proxy trap); QuickJS then reports "true" with an exception pending.
            if self.ctx.has_exception() {
                return Err(Error::Js(rquickjs::Error::Exception));
            }
            if is_instance {
                return Err(self.shape(&format!("is {hint}")));
            }
        }
        if value.is_error() {
            let mut map = Map::new();
            for key in ["name", "message"] {
                if let Ok(Some(text)) = object.get::<_, Option<rquickjs::Coerced<String>>>(key) {
                    self.charge(text.0.len())?;
                    map.insert(key.to_string(), serde_json::Value::String(text.0));
                }
            }
            return Ok(Start::Leaf(Some(serde_json::Value::Object(map))));
        }
        let kind = match object.as_array().cloned() {
            Some(array) => {
                let len = array.len();
                FrameKind::Array {
                    array,
                    len,
                    next: 0,
                    items: Vec::with_capacity(len.min(1024)),
                }
            }
            None => {
                let mut keys = Vec::new();
                for key in object.keys::<String>() {
                    let key = key?;
                    self.charge(key.len())?;
                    keys.push(key);
                }
                FrameKind::Object {
                    object,
                    keys: keys.into_iter(),
                    map: Map::new(),
                }
            }
        };
        Ok(Start::Container(Frame {
            value,
            current: None,
            kind,
        }))
    }

    fn charge(&mut self, bytes: usize) -> Result<(), Error> {
        match self.budget.checked_sub(bytes) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => Err(Error::TooLarge(format!(
                "the result is larger than {} once converted to JSON (the memory_mb budget); return less data",
                cheng_node::text::human_bytes(self.limit as u64)
            ))),
        }
    }

    /// Takes `bytes` from what is left of the result limit.
    fn json(&mut self, bytes: usize) -> Result<(), ()> {
        self.json_left = self.json_left.checked_sub(bytes).ok_or(())?;
        Ok(())
    }

    /// The error once the lower bound passes the result limit; `string_len` when a string did it.
    fn over_json_limit(&self, string_len: Option<usize>) -> Error {
        let path = self.path_display();
        too_large_for_the_limit(&match string_len {
            Some(len) => format!("{path} is a string of {len} bytes"),
            None => format!("the values up to {path} already pass it"),
        })
    }

    fn shape(&self, what: &str) -> Error {
        Error::Shape(format!("{} {what}", self.path_display()))
    }

    /// `result.items[3].name`, `result["a key"]`, shortened in the middle when very deep.
    fn path_display(&self) -> String {
        let mut out = String::from("result");
        for segment in self.stack.iter().filter_map(|f| f.current.as_ref()) {
            match segment {
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
                Segment::Key(k) if is_identifier(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Segment::Key(k) => {
                    out.push_str(&format!("[{}]", serde_json::Value::String(k.clone())))
                }
            }
        }
        if out.chars().count() > 200 {
            let head: String = out.chars().take(90).collect();
            let tail: String = out
                .chars()
                .rev()
                .take(90)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            out = format!("{head}…{tail}");
        }
        out
    }
}

/// A finite float as JSON (integral values as integers, like `JSON.stringify`); otherwise `null`.
fn number(f: f64) -> serde_json::Value {
    if !f.is_finite() {
        return serde_json::Value::Null;
    }
    if f.fract() == 0.0 && f.abs() <= MAX_SAFE {
        return serde_json::Value::from(f as i64);
    }
    Number::from_f64(f)
        .map(serde_json::Value::Number)
        .unwrap_or(serde_json::Value::Null)
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_json_stringify() {
        assert_eq!(number(3.0), serde_json::json!(3));
        assert_eq!(number(-0.0), serde_json::json!(0));
        assert_eq!(number(0.5), serde_json::json!(0.5));
        assert_eq!(number(f64::NAN), serde_json::Value::Null);
        assert_eq!(number(f64::INFINITY), serde_json::Value::Null);
        assert_eq!(number(1e300), serde_json::json!(1e300));
    }

    #[test]
    fn identifiers_are_dotted_and_others_quoted() {
        assert!(is_identifier("items"));
        assert!(is_identifier("$x_1"));
        assert!(!is_identifier("a key"));
        assert!(!is_identifier("1a"));
        assert!(!is_identifier(""));
    }
}
