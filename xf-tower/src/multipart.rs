//! A streaming reader of `multipart/form-data` bodies (RFC 7578 over RFC 2046), bounded in
//! everything it holds: a part's headers (8 KiB), the preamble before the first boundary
//! (8 KiB), the number of parts, and what it buffers of a part's data (one frame of the body
//! and a delimiter's length). A file part is handed on chunk by chunk as it arrives; text
//! fields are read only up to their limit. No input is ever buffered whole.
//!
//! What it accepts: a boundary of 1 to 70 characters, `CRLF` line ends, transport padding
//! after a delimiter, parts without headers (they have no name and are refused by the
//! caller), `Content-Disposition: form-data` with `name`, `filename` and `filename*`
//! (`UTF-8''` percent-encoded) parameters, quoted or not. The epilogue after the closing
//! delimiter is not read.

use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use xf_core::BodyError;

use crate::body_rate::body_error;
use crate::Body;

/// The longest block of headers of one part, and the longest preamble.
pub(crate) const MAX_PART_HEADER_BYTES: usize = 8 << 10;
/// The longest field name.
pub(crate) const MAX_NAME_BYTES: usize = 256;

/// Why a form could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FormError {
    /// The body failed (broken, or too slow).
    Body(BodyError),
    /// The body is not a well-formed form; says where.
    Malformed(String),
    /// The form is larger than a limit; names it.
    Limit(String),
}

impl FormError {
    /// The API error: `400` on `body` (or `408` for a body that was too slow).
    pub(crate) fn into_error(self) -> xf_core::Error {
        match self {
            FormError::Body(error) => error.into_error("body", "nothing was stored"),
            FormError::Malformed(message) => xf_core::Error::invalid(
                "body",
                format!("is not a valid multipart/form-data body: {message}"),
            ),
            FormError::Limit(message) => xf_core::Error::invalid("body", message),
        }
    }

    /// What a file part's reader reports: the body's own failure, or a broken body.
    pub(crate) fn into_body_error(self) -> BodyError {
        match self {
            FormError::Body(error) => error,
            FormError::Malformed(message) | FormError::Limit(message) => BodyError::Broken(message),
        }
    }
}

/// The headers of a part that matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartHead {
    /// `name`, at most [`MAX_NAME_BYTES`].
    pub name: String,
    /// `filename*` when given and decodable, else `filename`.
    pub file_name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first delimiter.
    Preamble,
    /// Right after a delimiter: the closing `--`, or padding and `CRLF` and a part's headers.
    Delimited,
    /// Inside a part's data.
    Data,
    /// After the closing delimiter.
    Done,
}

/// Reads a form part by part: [`FormReader::next_part`], then the part's data with
/// [`FormReader::next_chunk`] (or [`FormReader::text`]).
pub(crate) struct FormReader {
    body: Body,
    /// `CRLF--boundary`.
    delimiter: Vec<u8>,
    /// What was received and not yet handed on: slices of the body's own frames, copied
    /// only where a delimiter or a block of headers straddles two frames.
    buffer: Bytes,
    eof: bool,
    state: State,
    /// Bytes of preamble skipped so far.
    preamble: usize,
    parts: usize,
    max_parts: usize,
}

impl FormReader {
    /// A reader of `body`, whose `Content-Type` is `content_type`; at most `max_parts` parts.
    /// `Err` (for people) when the type is not `multipart/form-data` with a valid boundary.
    pub(crate) fn new(
        body: Body,
        content_type: Option<&str>,
        max_parts: usize,
    ) -> Result<Self, String> {
        let boundary = content_type
            .and_then(form_boundary)
            .ok_or_else(|| "must be multipart/form-data with a boundary".to_owned())?;
        let mut delimiter = b"\r\n--".to_vec();
        delimiter.extend_from_slice(boundary.as_bytes());
        // The first delimiter may open the body, without the line end before it.
        let buffer = Bytes::from_static(b"\r\n");
        Ok(FormReader {
            body,
            delimiter,
            buffer,
            eof: false,
            state: State::Preamble,
            preamble: 0,
            parts: 0,
            max_parts,
        })
    }

    /// The next frame of the body with data; `None` at its end.
    async fn frame(&mut self) -> Result<Option<Bytes>, FormError> {
        while !self.eof {
            match self.body.frame().await {
                None => self.eof = true,
                Some(Err(error)) => return Err(FormError::Body(body_error(&error))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Ok(Some(data));
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    /// Appends `data` to the buffer (a copy only when the buffer holds something).
    fn append(&mut self, data: Bytes) {
        self.buffer = if self.buffer.is_empty() {
            data
        } else {
            [&self.buffer[..], &data[..]].concat().into()
        };
    }

    /// Reads one more frame of the body into the buffer; `false` at its end.
    async fn fill(&mut self) -> Result<bool, FormError> {
        match self.frame().await? {
            Some(data) => {
                self.append(data);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn find(&self, needle: &[u8]) -> Option<usize> {
        memchr::memmem::find(&self.buffer, needle)
    }

    /// The next part's headers; `None` after the last part. The rest of the current part's
    /// data, if unread, is skipped.
    pub(crate) async fn next_part(&mut self) -> Result<Option<PartHead>, FormError> {
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Data => while self.next_chunk().await?.is_some() {},
                State::Preamble => self.skip_preamble().await?,
                State::Delimited => return self.read_head().await,
            }
        }
    }

    async fn skip_preamble(&mut self) -> Result<(), FormError> {
        loop {
            if let Some(at) = self.find(&self.delimiter) {
                self.preamble += at;
                self.buffer.advance(at + self.delimiter.len());
                self.state = State::Delimited;
            } else {
                // Keep what could be the start of the delimiter.
                let keep = self.delimiter.len() - 1;
                let skip = self.buffer.len().saturating_sub(keep);
                self.preamble += skip;
                self.buffer.advance(skip);
            }
            if self.preamble > MAX_PART_HEADER_BYTES {
                return Err(FormError::Malformed(format!(
                    "more than {MAX_PART_HEADER_BYTES} bytes come before the first boundary"
                )));
            }
            if self.state != State::Preamble {
                return Ok(());
            }
            if !self.fill().await? {
                return Err(FormError::Malformed(
                    "the body ends before its first boundary".to_owned(),
                ));
            }
        }
    }

    /// After a delimiter: the closing `--`, or a part's headers.
    async fn read_head(&mut self) -> Result<Option<PartHead>, FormError> {
        // `--` closes the form; else transport padding, then the line end.
        loop {
            let padding = self
                .buffer
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            let rest = &self.buffer[padding..];
            if self.buffer.starts_with(b"--") {
                self.state = State::Done;
                return Ok(None);
            }
            if rest.starts_with(b"\r\n") {
                self.buffer.advance(padding + 2);
                break;
            }
            let undecided = rest.is_empty() || rest == b"\r" || self.buffer[..] == b"-"[..];
            if !undecided || padding > MAX_PART_HEADER_BYTES {
                return Err(FormError::Malformed(
                    "a boundary is not followed by a line end".to_owned(),
                ));
            }
            if !self.fill().await? {
                return Err(FormError::Malformed(
                    "the body ends without its closing boundary".to_owned(),
                ));
            }
        }
        let block = loop {
            if self.buffer.starts_with(b"\r\n") {
                self.buffer.advance(2);
                break Bytes::new();
            }
            if let Some(end) = self.find(b"\r\n\r\n") {
                let block = self.buffer.split_to(end);
                self.buffer.advance(4);
                break block;
            }
            if self.buffer.len() > MAX_PART_HEADER_BYTES {
                return Err(FormError::Limit(format!(
                    "a part's headers are longer than {MAX_PART_HEADER_BYTES} bytes"
                )));
            }
            if !self.fill().await? {
                return Err(FormError::Malformed(
                    "the body ends inside a part's headers".to_owned(),
                ));
            }
        };
        if block.len() > MAX_PART_HEADER_BYTES {
            return Err(FormError::Limit(format!(
                "a part's headers are longer than {MAX_PART_HEADER_BYTES} bytes"
            )));
        }
        self.parts += 1;
        if self.parts > self.max_parts {
            return Err(FormError::Limit(format!(
                "the form has more than {} parts, the most accepted",
                self.max_parts
            )));
        }
        self.state = State::Data;
        part_head(&block).map(Some)
    }

    /// The next chunk of the current part's data; `None` at its end.
    pub(crate) async fn next_chunk(&mut self) -> Result<Option<Bytes>, FormError> {
        if self.state != State::Data {
            return Ok(None);
        }
        loop {
            if let Some(at) = self.find(&self.delimiter) {
                let data = self.buffer.split_to(at);
                self.buffer.advance(self.delimiter.len());
                self.state = State::Delimited;
                return Ok((!data.is_empty()).then_some(data));
            }
            // All but what could be the start of the delimiter is the part's.
            let keep = self.delimiter.len() - 1;
            let safe = self.buffer.len().saturating_sub(keep);
            if safe > 0 {
                return Ok(Some(self.buffer.split_to(safe)));
            }
            let Some(data) = self.frame().await? else {
                return Err(FormError::Malformed(
                    "the body ends inside a part, before its closing boundary".to_owned(),
                ));
            };
            // The few bytes kept are the part's unless a delimiter starts among them: then
            // they are handed on as they are, and the new frame is taken without a copy.
            if !self.buffer.is_empty() && data.len() >= keep {
                let seam = [&self.buffer[..], &data[..keep]].concat();
                if memchr::memmem::find(&seam, &self.delimiter).is_none() {
                    let tail = std::mem::replace(&mut self.buffer, data);
                    return Ok(Some(tail));
                }
            }
            self.append(data);
        }
    }

    /// The current part's data as UTF-8 text of at most `max` bytes; reading stops at the
    /// limit. `Err(Ok(()))` when longer, `Err(Err(_))` when the form fails.
    pub(crate) async fn text(&mut self, max: usize) -> Result<TextField, FormError> {
        let mut text = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            if text.len() + chunk.len() > max {
                return Ok(TextField::TooLong);
            }
            text.extend_from_slice(&chunk);
        }
        Ok(match String::from_utf8(text) {
            Ok(text) => TextField::Text(text),
            Err(_) => TextField::NotUtf8,
        })
    }
}

/// A text field's value, as [`FormReader::text`] read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextField {
    /// Its text.
    Text(String),
    /// Longer than the limit (the rest was not read).
    TooLong,
    /// Not UTF-8.
    NotUtf8,
}

/// The boundary of a `multipart/form-data` content type; `None` for another type, or a
/// boundary missing, empty, longer than 70 characters or with characters RFC 2046 excludes.
pub(crate) fn form_boundary(content_type: &str) -> Option<String> {
    let mut params = split_params(content_type);
    let kind = params.next()?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let boundary = params
        .filter_map(|param| param.split_once('='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, value)| unquote(value.trim()))?;
    let valid = (1..=70).contains(&boundary.len())
        && boundary
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"'()+_,-./:=? ".contains(&b))
        && !boundary.ends_with(' ');
    valid.then_some(boundary)
}

/// `text` split at the `;`s outside quoted strings.
fn split_params(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut quoted = false;
        let mut escaped = false;
        for (at, c) in text.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                ';' if !quoted => {
                    rest = Some(&text[at + 1..]);
                    return Some(&text[..at]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(text)
    })
}

/// A parameter value without its quotes: in a quoted string `\"` and `\\` stand for `"`
/// and `\`, and any other backslash for itself (browsers send Windows paths as they are).
fn unquote(value: &str) -> String {
    let Some(inner) = value
        .strip_prefix('"')
        .map(|v| v.strip_suffix('"').unwrap_or(v))
    else {
        return value.to_owned();
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next @ ('"' | '\\'))) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `filename*`'s `UTF-8''percent-encoded` value (RFC 8187), if it is one.
fn extended_value(value: &str) -> Option<String> {
    let (charset, rest) = value.split_once('\'')?;
    let (_language, encoded) = rest.split_once('\'')?;
    if !charset.eq_ignore_ascii_case("utf-8") {
        return None;
    }
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut input = encoded.bytes();
    while let Some(b) = input.next() {
        if b == b'%' {
            let high = (input.next()? as char).to_digit(16)?;
            let low = (input.next()? as char).to_digit(16)?;
            bytes.push((high * 16 + low) as u8);
        } else {
            bytes.push(b);
        }
    }
    String::from_utf8(bytes).ok()
}

/// The name and file name of a part, from its block of headers.
fn part_head(block: &[u8]) -> Result<PartHead, FormError> {
    let block = std::str::from_utf8(block)
        .map_err(|_| FormError::Malformed("a part's headers are not UTF-8".to_owned()))?;
    let disposition = block
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-disposition"))
        .map(|(_, value)| value.trim())
        .ok_or_else(|| {
            FormError::Malformed("a part has no Content-Disposition header".to_owned())
        })?;
    let mut params = split_params(disposition);
    if !params
        .next()
        .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("form-data"))
    {
        return Err(FormError::Malformed(
            "a part's Content-Disposition is not form-data".to_owned(),
        ));
    }
    let (mut name, mut file_name, mut extended) = (None, None, None);
    for param in params {
        let Some((key, value)) = param.split_once('=') else {
            continue;
        };
        let value = value.trim();
        match key.trim().to_ascii_lowercase().as_str() {
            "name" => name = Some(unquote(value)),
            "filename" => file_name = Some(unquote(value)),
            "filename*" => extended = extended_value(&unquote(value)),
            _ => {}
        }
    }
    let name = name.ok_or_else(|| {
        FormError::Malformed("a part's Content-Disposition has no name".to_owned())
    })?;
    if name.len() > MAX_NAME_BYTES {
        return Err(FormError::Limit(format!(
            "a field name is longer than {MAX_NAME_BYTES} bytes"
        )));
    }
    Ok(PartHead {
        name,
        file_name: extended.or(file_name),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const BOUNDARY: &str = "xf-boundary-7MA4YWxkTrZu0gW";

    fn content_type() -> String {
        format!("multipart/form-data; boundary={BOUNDARY}")
    }

    /// A body that sends `bytes` cut at `cuts` (offsets into it).
    fn body_in_pieces(bytes: Vec<u8>, cuts: &[usize]) -> Body {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            pieces.push(Ok::<_, std::io::Error>(Bytes::copy_from_slice(
                &bytes[from..cut],
            )));
            from = cut;
        }
        Body::from_stream(futures::stream::iter(pieces))
    }

    /// A form of `parts` (name, file name, data).
    fn encode(parts: &[(String, Option<String>, Vec<u8>)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (name, file_name, data) in parts {
            body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
            let mut disposition = format!("Content-Disposition: form-data; name=\"{name}\"");
            if let Some(file_name) = file_name {
                disposition.push_str(&format!("; filename=\"{file_name}\""));
            }
            body.extend_from_slice(disposition.as_bytes());
            body.extend_from_slice(b"\r\nContent-Type: application/octet-stream\r\n\r\n");
            body.extend_from_slice(data);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        body
    }

    /// Every part of a form: its head and its data, read chunk by chunk.
    async fn read_all(body: Body, max_parts: usize) -> Result<Vec<(PartHead, Vec<u8>)>, FormError> {
        let mut reader = FormReader::new(body, Some(&content_type()), max_parts).unwrap();
        let mut parts = Vec::new();
        while let Some(head) = reader.next_part().await? {
            let mut data = Vec::new();
            while let Some(chunk) = reader.next_chunk().await? {
                data.extend_from_slice(&chunk);
            }
            parts.push((head, data));
        }
        Ok(parts)
    }

    fn run<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn boundaries_are_read_as_rfc_2046_says() {
        assert_eq!(
            form_boundary("multipart/form-data; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(
            form_boundary("Multipart/Form-Data; charset=utf-8; BOUNDARY=\"a b:c\"").as_deref(),
            Some("a b:c")
        );
        for refused in [
            "multipart/form-data",
            "multipart/form-data; boundary=",
            "multipart/mixed; boundary=abc",
            "application/json",
            &format!("multipart/form-data; boundary={}", "a".repeat(71)),
            "multipart/form-data; boundary=\"ends with space \"",
            "multipart/form-data; boundary=a\u{e9}",
        ] {
            assert_eq!(form_boundary(refused), None, "{refused}");
        }
    }

    #[test]
    fn names_and_file_names_are_read_quoted_or_not_and_encoded() {
        let head = |line: &str| part_head(format!("Content-Disposition: {line}").as_bytes());
        assert_eq!(
            head(r#"form-data; name="title""#).unwrap(),
            PartHead {
                name: "title".into(),
                file_name: None
            }
        );
        let file = head(r#"form-data; name=file; filename="a \"b\"; c.mp4""#).unwrap();
        assert_eq!(file.file_name.as_deref(), Some(r#"a "b"; c.mp4"#));
        let windows = head(r#"form-data; name="file"; filename="C:\clips\x.mp4""#).unwrap();
        assert_eq!(windows.file_name.as_deref(), Some(r"C:\clips\x.mp4"));
        let encoded = head(
            "form-data; name=\"file\"; filename=\"x.mp4\"; filename*=UTF-8''%C3%A9t%C3%A9.mp4",
        )
        .unwrap();
        assert_eq!(encoded.file_name.as_deref(), Some("\u{e9}t\u{e9}.mp4"));
        assert!(matches!(
            head("attachment; name=x"),
            Err(FormError::Malformed(_))
        ));
        assert!(matches!(
            head("form-data; filename=x"),
            Err(FormError::Malformed(_))
        ));
        let long = format!("form-data; name=\"{}\"", "n".repeat(MAX_NAME_BYTES + 1));
        assert!(matches!(head(&long), Err(FormError::Limit(_))));
    }

    #[test]
    fn a_form_reads_back_whatever_its_chunking() {
        let parts = vec![
            ("title".to_owned(), None, b"Hello".to_vec()),
            (
                "file".to_owned(),
                Some("clip.mp4".to_owned()),
                // Data that holds the delimiter's start, and line ends.
                format!("\r\n--{}\r\n--xf\r\n", &BOUNDARY[..10]).into_bytes(),
            ),
            ("empty".to_owned(), None, Vec::new()),
        ];
        let bytes = encode(&parts);
        for size in [1, 2, 3, 7, 31, 64, bytes.len()] {
            let cuts: Vec<usize> = (size..bytes.len()).step_by(size).collect();
            let read = run(read_all(body_in_pieces(bytes.clone(), &cuts), 10)).unwrap();
            let read: Vec<_> = read
                .into_iter()
                .map(|(head, data)| (head.name, head.file_name, data))
                .collect();
            assert_eq!(read, parts, "pieces of {size}");
        }
    }

    #[test]
    fn limits_are_named_and_nothing_is_buffered_past_them() {
        // Headers that never end.
        let mut endless =
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"a\"").into_bytes();
        endless.extend(std::iter::repeat_n(b'x', 64 << 10));
        let error = run(read_all(body_in_pieces(endless, &[100, 5000]), 10)).unwrap_err();
        assert!(
            matches!(&error, FormError::Limit(m) if m.contains("8192")),
            "{error:?}"
        );
        // Too many parts.
        let many: Vec<_> = (0..5)
            .map(|i| (format!("f{i}"), None, b"x".to_vec()))
            .collect();
        let error = run(read_all(body_in_pieces(encode(&many), &[]), 4)).unwrap_err();
        assert_eq!(
            error,
            FormError::Limit("the form has more than 4 parts, the most accepted".into())
        );
        // A text field stops being read at its limit.
        let long = vec![("title".to_owned(), None, vec![b'a'; 100_000])];
        let text = run(async {
            let mut reader = FormReader::new(
                body_in_pieces(encode(&long), &[10, 20]),
                Some(&content_type()),
                4,
            )
            .unwrap();
            reader.next_part().await.unwrap();
            reader.text(64 << 10).await.unwrap()
        });
        assert_eq!(text, TextField::TooLong);
        // A preamble that never reaches the boundary.
        let error = run(read_all(body_in_pieces(vec![b'p'; 20_000], &[]), 4)).unwrap_err();
        assert!(matches!(error, FormError::Malformed(_)));
    }

    #[test]
    fn truncated_forms_are_malformed() {
        let bytes = encode(&[("title".to_owned(), None, b"Hello".to_vec())]);
        for end in 0..bytes.len() - 4 {
            let result = run(read_all(body_in_pieces(bytes[..end].to_vec(), &[]), 10));
            assert!(
                matches!(result, Err(FormError::Malformed(_))),
                "cut at {end}: {result:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_form_round_trips_in_any_chunks(
            parts in proptest::collection::vec(
                ("[a-zA-Z0-9_.\\[\\]]{1,20}", proptest::option::of("[a-zA-Z0-9 _.-]{1,20}"),
                 proptest::collection::vec(any::<u8>(), 0..300)),
                0..6),
            cuts in proptest::collection::vec(any::<usize>(), 0..20),
        ) {
            let bytes = encode(&parts);
            let read = run(read_all(body_in_pieces(bytes, &cuts), 10)).unwrap();
            let read: Vec<_> = read
                .into_iter()
                .map(|(head, data)| (head.name, head.file_name, data))
                .collect();
            prop_assert_eq!(read, parts);
        }

        #[test]
        fn any_bytes_are_read_or_refused_without_a_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..2000),
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let _ = run(read_all(body_in_pieces(bytes, &cuts), 10));
        }

        #[test]
        fn mangled_forms_are_read_or_refused_without_a_panic(
            parts in proptest::collection::vec(
                ("[a-z]{1,5}", proptest::option::of("[a-z.]{1,8}"),
                 proptest::collection::vec(any::<u8>(), 0..50)),
                1..4),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let mut bytes = encode(&parts);
            for (at, byte) in flips {
                let len = bytes.len();
                bytes[at % len] = byte;
            }
            let _ = run(read_all(body_in_pieces(bytes, &cuts), 10));
        }

        #[test]
        fn header_lines_of_any_text_are_total(line in "\\PC{0,200}") {
            let _ = part_head(line.as_bytes());
            let _ = form_boundary(&line);
        }
    }
}
