//! Log lines captured where they are logged and formatted on the log thread.
//!
//! tracing-subscriber's `fmt` layer formats each line on the thread that logs it: the
//! timestamp, the escaping of every field, the span context. With a line per request that was
//! a tenth of the server's CPU. [`DeferredFormat`] keeps only the values (the text of all of
//! an event's fields in one buffer, numbers as they are, the enclosing spans' fields shared
//! with the span) and hands them to the log thread ([`crate::log_queue`]), which formats
//! them: text lines shaped like `fmt`'s, or JSON objects shaped like `fmt().json()`'s with
//! the current span and the span list.

use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value as Json};
use tracing::field::{Field, Visit};
use tracing::{span, Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::log_queue::Sender;

/// The values of an event's or a span's fields, in the order they were recorded.
#[derive(Debug, Clone)]
pub struct Fields {
    /// The text of every text value, one after the other.
    text: String,
    values: Vec<(&'static str, Value)>,
}

#[derive(Debug, Clone, Copy)]
enum Value {
    /// `text[start..end]`, written with `Display` or `Debug`: shown bare in text lines.
    Shown(usize, usize),
    /// `text[start..end]`, a `&str` value: quoted in text lines, as `fmt` does.
    Str(usize, usize),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
}

impl Default for Fields {
    /// Room for a request's log line without growing.
    fn default() -> Self {
        Self {
            text: String::with_capacity(192),
            values: Vec::with_capacity(8),
        }
    }
}

impl Fields {
    fn text_of(&self, start: usize, end: usize) -> &str {
        &self.text[start..end]
    }

    /// `(name, value)` pairs, the message first if there is one.
    fn json(&self, into: &mut Map<String, Json>) {
        for &(name, value) in &self.values {
            let value = match value {
                Value::Shown(start, end) | Value::Str(start, end) => {
                    Json::from(self.text_of(start, end))
                }
                Value::I64(n) => Json::from(n),
                Value::U64(n) => Json::from(n),
                Value::F64(n) => Json::from(n),
                Value::Bool(b) => Json::from(b),
            };
            into.insert(name.to_owned(), value);
        }
    }

    /// `name=value` pairs separated by spaces; the message (if `message_bare`) bare and first.
    fn text(&self, out: &mut Vec<u8>, message_bare: bool) {
        let message = message_bare
            .then(|| self.values.iter().position(|(name, _)| *name == "message"))
            .flatten();
        if let Some(index) = message {
            self.write_value(self.values[index].1, out);
        }
        let mut first = message.is_none();
        for (index, &(name, value)) in self.values.iter().enumerate() {
            if Some(index) == message {
                continue;
            }
            if !first {
                out.push(b' ');
            }
            first = false;
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            self.write_value(value, out);
        }
    }

    /// A value as `fmt` shows it: numbers through itoa and ryu, which write what `{}` and
    /// `{:?}` would without the formatting machinery (this runs for every field of every
    /// line), a `&str` quoted and escaped, and a shown value bare but for its control
    /// characters, escaped as `{:?}` escapes them: a value from outside (a callback's
    /// `error_description`, a path) cannot end the line and forge the next one, nor send a
    /// terminal escape.
    fn write_value(&self, value: Value, out: &mut Vec<u8>) {
        match value {
            Value::Shown(start, end) => write_shown(self.text_of(start, end), out),
            Value::Str(start, end) => {
                let _ = write!(out, "{:?}", self.text_of(start, end));
            }
            Value::I64(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            Value::U64(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            Value::F64(n) => write_f64(n, out),
            Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        }
    }

    fn push_text(&mut self, name: &'static str, str_value: bool, write: impl FnOnce(&mut String)) {
        let start = self.text.len();
        write(&mut self.text);
        let end = self.text.len();
        let value = if str_value {
            Value::Str(start, end)
        } else {
            Value::Shown(start, end)
        };
        self.values.push((name, value));
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.push_text(field.name(), false, |text| {
            let _ = write!(text, "{value:?}");
        });
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        // The message is shown bare even when it is a plain string.
        let str_value = field.name() != "message";
        self.push_text(field.name(), str_value, |text| text.push_str(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.push_text(field.name(), false, |text| {
            let _ = write!(text, "{value}");
        });
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.values.push((field.name(), Value::I64(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.values.push((field.name(), Value::U64(value)));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.values.push((field.name(), Value::F64(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.values.push((field.name(), Value::Bool(value)));
    }
}

/// `text` bare, each control character (C0, DEL and C1: line ends, escapes) written as
/// `char::escape_debug` writes it (`\n`, `\u{1b}`).
fn write_shown(text: &str, out: &mut Vec<u8>) {
    // C0 and DEL are single bytes below 0x20 and 0x7f; C1 (U+0080 to U+009F) starts with 0xc2.
    if !text.bytes().any(|b| b < 0x20 || b == 0x7f || b == 0xc2) {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    let mut buffer = [0u8; 4];
    for c in text.chars() {
        if c.is_control() {
            let _ = write!(out, "{}", c.escape_debug());
        } else {
            out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
        }
    }
}

/// `n` as `{:?}` writes it.
///
/// A whole number of thousandths below 10^12 (every `latency_ms`: microseconds over 1000) is
/// written from its integer: the nearest double to k/1000, which is what dividing gives, is
/// written shortest as k/1000 itself, since any other decimal of at most three places is at
/// least 0.001 away and the doubles there are far closer together than that. Everything else
/// goes through ryu, or, below 1e-4 where ryu writes no exponent, `{:?}` itself.
fn write_f64(n: f64, out: &mut Vec<u8>) {
    let thousandths = n * 1000.0;
    if n != 0.0
        && thousandths.fract() == 0.0
        && thousandths.abs() < 1e15
        && thousandths / 1000.0 == n
    {
        // In range for i64, and exact.
        let thousandths = thousandths as i64;
        if thousandths < 0 {
            out.push(b'-');
        }
        let magnitude = thousandths.unsigned_abs();
        out.extend_from_slice(itoa::Buffer::new().format(magnitude / 1000).as_bytes());
        let digits: [u8; 3] = padded_digits(magnitude % 1000);
        // `{:?}` keeps one place for a whole number (`12.0`) and no trailing zeros.
        let places = digits
            .iter()
            .rposition(|d| *d != b'0')
            .map_or(1, |last| last + 1);
        out.push(b'.');
        out.extend_from_slice(&digits[..places]);
    } else if n != 0.0 && n.abs() < 1e-4 {
        let _ = write!(out, "{n:?}");
    } else {
        out.extend_from_slice(ryu::Buffer::new().format(n).as_bytes());
    }
}

/// The last `N` decimal digits of `n`, zero-padded.
fn padded_digits<const N: usize>(mut n: u64) -> [u8; N] {
    let mut digits = [b'0'; N];
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    digits
}

/// One event as captured: what the log thread formats.
#[derive(Debug)]
pub struct Record {
    time: SystemTime,
    level: Level,
    target: &'static str,
    fields: Fields,
    /// The spans the event is in, outermost first: name and fields.
    spans: Vec<(&'static str, Arc<Fields>)>,
}

/// The line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `fmt`'s default: `2026-11-24T05:47:21.123456Z  INFO span{k=v}: target: message k=v`.
    Text {
        /// Colour the level (for a terminal).
        ansi: bool,
    },
    /// One JSON object a line: `timestamp`, `level`, `fields`, `target`, and inside a span
    /// `span` (the innermost) and `spans` (outermost first), each with its `name`.
    Json,
}

/// Formats records on the log thread; it remembers the current second's text, so most lines
/// format only their microseconds.
#[derive(Debug)]
pub struct Renderer {
    format: Format,
    /// The Unix second last rendered, and its `2026-11-24T05:47:21` text.
    second: Option<(u64, String)>,
}

impl Renderer {
    /// A renderer of `format` lines.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            second: None,
        }
    }

    /// Appends `record` as one line.
    pub fn render(&mut self, record: Record, out: &mut Vec<u8>) {
        match self.format {
            Format::Text { ansi } => {
                self.timestamp(record.time, out);
                // Whole pieces copied, not formatted: this runs for every line.
                let (level, colour) = match record.level {
                    Level::TRACE => ("TRACE", "35"),
                    Level::DEBUG => ("DEBUG", "34"),
                    Level::INFO => (" INFO", "32"),
                    Level::WARN => (" WARN", "33"),
                    Level::ERROR => ("ERROR", "31"),
                };
                out.push(b' ');
                if ansi {
                    out.extend_from_slice(b"\x1b[");
                    out.extend_from_slice(colour.as_bytes());
                    out.push(b'm');
                    out.extend_from_slice(level.as_bytes());
                    out.extend_from_slice(b"\x1b[0m");
                } else {
                    out.extend_from_slice(level.as_bytes());
                }
                out.push(b' ');
                for (name, fields) in &record.spans {
                    out.extend_from_slice(name.as_bytes());
                    if !fields.values.is_empty() {
                        out.push(b'{');
                        fields.text(out, false);
                        out.push(b'}');
                    }
                    out.push(b':');
                }
                if !record.spans.is_empty() {
                    out.push(b' ');
                }
                out.extend_from_slice(record.target.as_bytes());
                out.extend_from_slice(b": ");
                record.fields.text(out, true);
                out.push(b'\n');
            }
            Format::Json => {
                let mut time = Vec::with_capacity(32);
                self.timestamp(record.time, &mut time);
                let mut object = Map::new();
                let time = String::from_utf8_lossy(&time).into_owned();
                object.insert("timestamp".into(), Json::from(time));
                object.insert("level".into(), Json::from(record.level.as_str()));
                let mut fields = Map::new();
                record.fields.json(&mut fields);
                object.insert("fields".into(), Json::Object(fields));
                object.insert("target".into(), Json::from(record.target));
                let spans: Vec<Json> = record
                    .spans
                    .iter()
                    .map(|(name, fields)| {
                        let mut span = Map::new();
                        fields.json(&mut span);
                        span.insert("name".into(), Json::from(*name));
                        Json::Object(span)
                    })
                    .collect();
                if let Some(current) = spans.last() {
                    object.insert("span".into(), current.clone());
                    object.insert("spans".into(), Json::Array(spans));
                }
                if serde_json::to_writer(&mut *out, &Json::Object(object)).is_ok() {
                    out.push(b'\n');
                }
            }
        }
    }

    /// `2026-11-24T05:47:21.123456Z`: RFC 3339 in UTC with microseconds.
    fn timestamp(&mut self, time: SystemTime, out: &mut Vec<u8>) {
        let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let second = since_epoch.as_secs();
        let text = match &self.second {
            Some((cached, text)) if *cached == second => text,
            _ => {
                let text = DateTime::<Utc>::from(UNIX_EPOCH + Duration::from_secs(second))
                    .format("%Y-%m-%dT%H:%M:%S")
                    .to_string();
                &self.second.insert((second, text)).1
            }
        };
        out.extend_from_slice(text.as_bytes());
        let micros: [u8; 6] = padded_digits(since_epoch.subsec_micros().into());
        out.push(b'.');
        out.extend_from_slice(&micros);
        out.push(b'Z');
    }
}

/// The fields of the request the current task serves, as a span's [`Fields`]; `None` outside
/// a request (so the request log line, written once the request is done, builds nothing).
pub type RequestContext = fn() -> Option<Fields>;

/// The layer: captures each event (and the fields of each span) and queues it for the log
/// thread. Events are dropped only if that thread has stopped.
#[derive(Debug)]
pub struct DeferredFormat {
    sender: Sender<Record>,
    request_context: Option<RequestContext>,
}

impl DeferredFormat {
    /// The layer sending its records to `sender`.
    pub fn new(sender: Sender<Record>) -> Self {
        Self {
            sender,
            request_context: None,
        }
    }

    /// Shows an event logged while a request is served inside a `request` span with the
    /// fields `context` writes, as if the span were there: for a subscriber that leaves
    /// xf-tower's `request` span out ([`xf_tower::is_request_span`]) to spare every request
    /// its cost, and takes the same fields from [`xf_tower::current_request`] (see
    /// [`request_span_fields`]) only for the few events a request logs.
    pub fn with_request_context(self, context: RequestContext) -> Self {
        Self {
            request_context: Some(context),
            ..self
        }
    }
}

/// The fields of xf-tower's `request` span, from the request the current task serves.
pub fn request_span_fields() -> Option<Fields> {
    xf_tower::current_request(request_fields)
}

/// The span's fields as it records them: the id displayed, the service a string.
fn request_fields(id: &str, service: &str) -> Fields {
    let mut fields = Fields::default();
    fields.push_text("request_id", false, |text| text.push_str(id));
    fields.push_text("service", true, |text| text.push_str(service));
    fields
}

impl<S> Layer<S> for DeferredFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attributes: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attributes.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Arc::new(fields));
        }
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(fields) = span.extensions_mut().get_mut::<Arc<Fields>>() {
                let fields: &mut Fields = Arc::make_mut(fields);
                values.record(fields);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut spans = Vec::new();
        if let Some(request) = self.request_context.and_then(|context| context()) {
            spans.push(("request", Arc::new(request)));
        }
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                let fields = span.extensions().get::<Arc<Fields>>().cloned();
                spans.push((span.name(), fields.unwrap_or_default()));
            }
        }
        self.sender.send(Record {
            time: SystemTime::now(),
            level: *event.metadata().level(),
            target: event.metadata().target(),
            fields,
            spans,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;
    use crate::log_queue::LogQueue;

    /// A writer that keeps what it is given.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Kept {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    thread_local! {
        static IN_REQUEST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// A request context of `req_1` answered by `api` while `IN_REQUEST` is set.
    fn test_request() -> Option<Fields> {
        IN_REQUEST.get().then(|| request_fields("req_1", "api"))
    }

    /// What a request logs, through the layer and the queue, in `format`.
    fn logged(format: Format) -> String {
        logged_in(format, false)
    }

    /// As [`logged`]; with `context`, the request is not a span but a [`RequestContext`].
    fn logged_in(format: Format, context: bool) -> String {
        let kept = Kept::default();
        let mut renderer = Renderer::new(format);
        let (queue, sender) = LogQueue::start(kept.clone(), move |record, out| {
            renderer.render(record, out)
        })
        .unwrap();
        let mut layer = DeferredFormat::new(sender);
        if context {
            layer = layer.with_request_context(test_request);
        }
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(port = 8080_u64, "listening");
            let in_request = || {
                tracing::warn!(cause = %"disk full", ok = false, "storage unavailable");
            };
            if context {
                IN_REQUEST.set(true);
                in_request();
                IN_REQUEST.set(false);
            } else {
                let span = tracing::info_span!("request", request_id = %"req_1", service = "api");
                span.in_scope(in_request);
            }
            tracing::info!(
                request_id = %"req_1",
                method = %"GET",
                path = %"/api/v1/properties/prop_1",
                status = 200_u64,
                latency_ms = 0.25,
                "request"
            );
        });
        drop(queue);
        let bytes = kept.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    /// One event whose every kind of field (the message, a shown value, a `&str`, a span's
    /// field, an error) carries `outside`, in `format`.
    fn logged_with(format: Format, outside: &str) -> String {
        let kept = Kept::default();
        let mut renderer = Renderer::new(format);
        let (queue, sender) = LogQueue::start(kept.clone(), move |record, out| {
            renderer.render(record, out)
        })
        .unwrap();
        let subscriber = tracing_subscriber::registry().with(DeferredFormat::new(sender));
        tracing::subscriber::with_default(subscriber, || {
            let error = std::io::Error::other(outside.to_owned());
            let span = tracing::info_span!("request", path = %outside, service = outside);
            span.in_scope(|| {
                tracing::info!(
                    shown = %outside,
                    debugged = ?outside,
                    text = outside,
                    error = &error as &dyn std::error::Error,
                    "callback {outside}"
                );
            });
        });
        drop(queue);
        let bytes = kept.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_forged_line_in_a_field_stays_in_its_field() {
        let forged = "x\n2026-11-24T05:47:21.123456Z  INFO xf: request method=DELETE\r\u{1b}[31m";
        let text = logged_with(Format::Text { ansi: false }, forged);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("callback x\\n2026"), "{text}");
        assert!(text.contains("shown=x\\n2026"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    proptest::proptest! {
        /// Any bytes from outside in any field, in either format, make exactly one line.
        #[test]
        fn any_field_from_outside_makes_one_line(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let outside = String::from_utf8_lossy(&bytes);
            for format in [Format::Text { ansi: false }, Format::Text { ansi: true }, Format::Json] {
                let logged = logged_with(format, &outside);
                proptest::prop_assert_eq!(logged.matches('\n').count(), 1, "{:?}", logged);
                proptest::prop_assert!(logged.ends_with('\n'));
                proptest::prop_assert!(!logged.contains('\r'));
            }
        }
    }

    #[test]
    fn text_lines_read_like_fmt() {
        let text = logged(Format::Text { ansi: false });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        // The timestamp: RFC 3339 in UTC with microseconds.
        let (time, _) = lines[0].split_once(' ').unwrap();
        assert_eq!(time.len(), "2026-11-24T05:47:21.123456Z".len(), "{time}");
        assert!(DateTime::parse_from_rfc3339(time).is_ok(), "{time}");
        let rest = |line: &str| line.split_once(' ').unwrap().1.to_owned();
        let module = module_path!();
        assert_eq!(
            rest(lines[0]),
            format!(" INFO {module}: listening port=8080")
        );
        assert_eq!(
            rest(lines[1]),
            format!(
                " WARN request{{request_id=req_1 service=\"api\"}}: {module}: \
                 storage unavailable cause=disk full ok=false"
            )
        );
        assert_eq!(
            rest(lines[2]),
            format!(
                " INFO {module}: request request_id=req_1 method=GET \
                 path=/api/v1/properties/prop_1 status=200 latency_ms=0.25"
            )
        );
    }

    #[test]
    fn a_request_context_reads_as_the_request_span() {
        let without_time = |text: String| -> Vec<String> {
            text.lines()
                .map(|line| match serde_json::from_str::<Json>(line) {
                    Ok(mut object) => {
                        object["timestamp"] = Json::Null;
                        object.to_string()
                    }
                    Err(_) => line.split_once(' ').unwrap().1.to_owned(),
                })
                .collect()
        };
        for format in [Format::Text { ansi: false }, Format::Json] {
            assert_eq!(
                without_time(logged_in(format, true)),
                without_time(logged_in(format, false)),
            );
        }
        // Outside a request, xf-tower has no context to give.
        assert!(request_span_fields().is_none());
    }

    #[test]
    fn numbers_read_as_rust_formats_them() {
        let floats = [
            0.0,
            -0.0,
            0.001,
            0.002,
            0.25,
            1.0,
            12.355,
            999.999,
            123_456.0,
            1e-4,
            9.9e-5,
            1e-5,
            1e-7,
            1e15,
            1e16,
            1.5e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut fields = Fields::default();
        for n in floats {
            fields.values.push(("n", Value::F64(n)));
        }
        fields.values.push(("i", Value::I64(i64::MIN)));
        fields.values.push(("u", Value::U64(u64::MAX)));
        fields.values.push(("b", Value::Bool(true)));
        let mut out = Vec::new();
        fields.text(&mut out, false);
        let mut wanted: Vec<String> = floats.iter().map(|n| format!("n={n:?}")).collect();
        wanted.extend([
            format!("i={}", i64::MIN),
            format!("u={}", u64::MAX),
            "b=true".to_owned(),
        ]);
        assert_eq!(String::from_utf8(out).unwrap(), wanted.join(" "));
        // Latencies: every whole microsecond up to a second, and some far beyond, with signs.
        let mut micros: Vec<i64> = (0..1_000_000).collect();
        micros.extend([
            1_234_567_890,
            999_999_999_999,
            999_999_999_999_999,
            1_000_000_000_000_000,
            4_503_599_627_370_497,
        ]);
        for micros in micros {
            for n in [micros as f64 / 1000.0, -(micros as f64) / 1000.0] {
                let mut out = Vec::new();
                write_f64(n, &mut out);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    format!("{n:?}"),
                    "{micros}"
                );
            }
        }
    }

    #[test]
    fn a_terminal_gets_the_level_in_colour_and_otherwise_the_same_line() {
        let plain = logged(Format::Text { ansi: false });
        let coloured = logged(Format::Text { ansi: true });
        let after_time = |text: &str| -> Vec<String> {
            text.lines()
                .map(|line| line.split_once(' ').unwrap().1.to_owned())
                .collect()
        };
        let coloured = after_time(&coloured);
        let uncoloured: Vec<String> = coloured
            .iter()
            .map(|line| {
                line.replace("\x1b[32m", "")
                    .replace("\x1b[33m", "")
                    .replace("\x1b[0m", "")
            })
            .collect();
        assert_eq!(uncoloured, after_time(&plain));
        assert!(
            coloured[0].starts_with("\x1b[32m INFO\x1b[0m "),
            "{:?}",
            coloured[0]
        );
        assert!(
            coloured[1].starts_with("\x1b[33m WARN\x1b[0m "),
            "{:?}",
            coloured[1]
        );
    }

    #[test]
    fn timestamps_are_right_within_and_across_seconds() {
        let mut renderer = Renderer::new(Format::Text { ansi: false });
        let at = |micros: u64| UNIX_EPOCH + Duration::from_micros(micros);
        // 2026-11-24T05:47:21Z is 1_795_499_241 seconds after the epoch.
        let base = 1_795_499_241_000_000;
        let mut stamps = Vec::new();
        for micros in [
            base + 5,
            base + 999_999,
            base + 1_000_000,
            base + 5,
            base + 86_400_000_007,
        ] {
            let mut out = Vec::new();
            renderer.timestamp(at(micros), &mut out);
            stamps.push(String::from_utf8(out).unwrap());
        }
        assert_eq!(
            stamps,
            [
                "2026-11-24T05:47:21.000005Z",
                "2026-11-24T05:47:21.999999Z",
                "2026-11-24T05:47:22.000000Z",
                "2026-11-24T05:47:21.000005Z",
                "2026-11-25T05:47:21.000007Z",
            ]
        );
    }

    #[test]
    fn json_lines_carry_fields_and_spans() {
        let text = logged(Format::Json);
        let lines: Vec<Json> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["level"], "INFO");
        assert_eq!(lines[0]["target"], module_path!());
        assert_eq!(
            lines[0]["fields"],
            serde_json::json!({"message": "listening", "port": 8080})
        );
        assert!(lines[0].get("span").is_none());
        let span = serde_json::json!({"request_id": "req_1", "service": "api", "name": "request"});
        assert_eq!(lines[1]["level"], "WARN");
        assert_eq!(lines[1]["span"], span);
        assert_eq!(lines[1]["spans"], serde_json::json!([span]));
        assert_eq!(lines[1]["fields"]["cause"], "disk full");
        assert_eq!(lines[1]["fields"]["ok"], false);
        assert_eq!(
            lines[2]["fields"],
            serde_json::json!({
                "message": "request",
                "request_id": "req_1",
                "method": "GET",
                "path": "/api/v1/properties/prop_1",
                "status": 200,
                "latency_ms": 0.25
            })
        );
        let time = lines[2]["timestamp"].as_str().unwrap();
        assert!(DateTime::parse_from_rfc3339(time).is_ok(), "{time}");
    }
}
