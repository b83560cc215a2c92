//! A streaming tokenizer of HTML, reading only what the page scanner needs: text, start tags
//! with their attributes, and end tags.
//!
//! It follows the tokenizer of the HTML standard where a page's facts depend on it: comments
//! (`<!-- -->`, `<!-->`, `--!>`), doctypes and bogus comments (`<!…>`, `<?…>`, `</ …>`), quoted
//! and unquoted attribute values (a `>` inside quotes does not end a tag), the raw text of
//! `script`, `style`, `title`, `textarea`, `xmp`, `iframe`, `noembed`, `noframes` and
//! `noscript` (read as a browser that runs scripts reads it), which ends only at its own end
//! tag, `plaintext`, and SVG and MathML content, where none of
//! those switches apply and a self-closing tag has no content. It builds no tree, decodes no
//! character references (the scanner decodes what it keeps) and copies nothing it does not
//! hand over: text and tags are slices of the input.
//!
//! Fed chunk by chunk, it holds back only an unfinished tag or comment (at most
//! [`Tokenizer::MEMORY`] bytes: a larger one stops it) and the last bytes of a text that
//! could be the start of a raw text element's end tag or of a character cut by the chunk's
//! end. Its output does not depend on where the chunks end.

use std::ops::Range;

/// What the tokenizer hands over.
pub(crate) trait Sink {
    /// Text, as written (character references not decoded), cut only between characters.
    /// `ends_node` is set on the last piece of a text node (the next thing is markup or the
    /// end of the page).
    fn text(&mut self, text: &[u8], ends_node: bool);
    /// A start tag.
    fn start_tag(&mut self, tag: &Tag<'_>);
    /// An end tag, by its lower-case name.
    fn end_tag(&mut self, name: &[u8]);
}

/// The tokenizer gave up: a tag or comment larger than [`Tokenizer::MEMORY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge;

/// A start tag.
#[derive(Debug)]
pub(crate) struct Tag<'a> {
    /// The name, in lower case.
    pub name: &'a [u8],
    source: &'a [u8],
    attributes: &'a [(Range<usize>, Range<usize>)],
    /// Written `<name/>`.
    pub self_closing: bool,
    /// Read inside an `svg` or `math` element.
    pub foreign: bool,
}

impl<'a> Tag<'a> {
    /// The raw value of the first attribute called `name` (ASCII case-insensitive), as
    /// written: an attribute without a value has an empty one.
    pub fn raw(&self, name: &str) -> Option<&'a [u8]> {
        self.attributes
            .iter()
            .find(|(n, _)| self.source[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, value)| &self.source[value.clone()])
    }

    /// Whether the tag has an attribute called `name`.
    pub fn has(&self, name: &str) -> bool {
        self.raw(name).is_some()
    }

    /// Whether an element of this tag has content and an end tag: not a void element (`img`,
    /// `meta`, …), nor a self-closing tag in SVG or MathML (or a self-closing `svg` or `math`).
    pub fn has_content(&self) -> bool {
        let foreign_element = self.foreign || matches!(self.name, b"svg" | b"math");
        !(is_void(self.name) || self.self_closing && foreign_element)
    }
}

/// Elements that never have content.
fn is_void(name: &[u8]) -> bool {
    matches!(
        name,
        b"area"
            | b"base"
            | b"basefont"
            | b"bgsound"
            | b"br"
            | b"col"
            | b"embed"
            | b"frame"
            | b"hr"
            | b"img"
            | b"input"
            | b"keygen"
            | b"link"
            | b"meta"
            | b"param"
            | b"source"
            | b"track"
            | b"wbr"
    )
}

/// Where the tokenizer is between two chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Markup and text.
    Data,
    /// The text of a raw text element (its name, in lower case), up to its end tag; in a
    /// `script`, `<!--` and `<script>` may keep it from ending at the first one (`escape`).
    /// `skip` bytes from where it goes on were read already.
    RawText {
        element: &'static [u8],
        escape: Escape,
        skip: usize,
    },
    /// Everything left is text (`<plaintext>`).
    Plaintext,
}

/// Where a script's text is in the escapes of the HTML standard, which keep old pages'
/// `<!-- document.write("<script>…</script>") -->` one script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Plain script text: `</script>` ends it.
    None,
    /// After `<!--`: `</script>` still ends it, `<script>` starts a script in the script.
    Escaped,
    /// After `<!--` and `<script>`: `</script>` ends only the inner script.
    DoubleEscaped,
}

/// The length of a `<element` (or, with `closing`, `</element`) tag's opening at the start
/// of `text`, the name in any case and followed by white space, `/` or `>`.
fn tag_opening_at(text: &[u8], element: &[u8], closing: bool) -> Option<usize> {
    let name = if closing { 2 } else { 1 };
    let end = name + element.len();
    let opens = text.first() == Some(&b'<') && (!closing || text.get(1) == Some(&b'/'));
    let named = text
        .get(name..end)
        .is_some_and(|n| n.eq_ignore_ascii_case(element));
    let ends = text
        .get(end)
        .is_some_and(|b| is_space(*b) || matches!(b, b'/' | b'>'));
    (opens && named && ends).then_some(end)
}

/// Reads the text of the raw text element `element` from `from` up to `until` (looking past
/// it for what starts before it): where its end tag starts, if it is there, and otherwise
/// where the reading stopped (a sequence begun before `until` is read whole). A `script`
/// follows the standard's escapes, kept in `escape`.
fn raw_text_end(
    input: &[u8],
    from: usize,
    until: usize,
    element: &[u8],
    escape: &mut Escape,
) -> (Option<usize>, usize) {
    let script = element == b"script";
    let mut at = from;
    while at < until {
        let found = if script {
            memchr::memchr2(b'<', b'-', &input[at..until])
        } else {
            memchr::memchr(b'<', &input[at..until])
        };
        let Some(found) = found else {
            return (None, until);
        };
        at += found;
        let rest = &input[at..];
        if rest[0] == b'-' {
            if *escape != Escape::None && rest.starts_with(b"-->") {
                *escape = Escape::None;
                at += 3;
            } else {
                at += 1;
            }
            continue;
        }
        if script && *escape == Escape::None && rest.starts_with(b"<!--") {
            // The dashes may also close it (`<!-->`).
            *escape = Escape::Escaped;
            at += 2;
        } else if let Some(length) = tag_opening_at(rest, element, true) {
            if *escape != Escape::DoubleEscaped {
                return (Some(at), at);
            }
            *escape = Escape::Escaped;
            at += length;
        } else if let Some(length) =
            tag_opening_at(rest, element, false).filter(|_| *escape == Escape::Escaped)
        {
            *escape = Escape::DoubleEscaped;
            at += length;
        } else {
            at += 1;
        }
    }
    (None, at)
}

/// The raw text element a start tag read in HTML content opens, if any.
fn raw_text_element(name: &[u8]) -> Option<&'static [u8]> {
    const RAW: &[&[u8]] = &[
        b"script",
        b"style",
        b"title",
        b"textarea",
        b"xmp",
        b"iframe",
        b"noembed",
        b"noframes",
        b"noscript",
    ];
    RAW.iter().copied().find(|raw| *raw == name)
}

/// What a `<` starts.
enum Markup {
    /// Nothing: the `<` is text.
    Text,
    /// Not known until more bytes come.
    Unknown,
    /// A start tag (`<` and a letter).
    StartTag,
    /// An end tag (`</` and a letter).
    EndTag,
    /// A comment (`<!--`).
    Comment,
    /// A CDATA section in SVG or MathML (`<![CDATA[`): text up to `]]>`.
    Cdata,
    /// A doctype, a bogus comment or `</>`: skipped to the next `>`.
    Bogus,
}

fn markup_at(input: &[u8], at: usize, at_end: bool, foreign: bool) -> Markup {
    let unknown = if at_end {
        Markup::Text
    } else {
        Markup::Unknown
    };
    if foreign && input.get(at + 1) == Some(&b'!') {
        let seen = &input[at..input.len().min(at + CDATA.len())];
        if seen == CDATA {
            return Markup::Cdata;
        }
        if CDATA.starts_with(seen) && !at_end {
            return Markup::Unknown;
        }
    }
    match input.get(at + 1) {
        None => unknown,
        Some(byte) if byte.is_ascii_alphabetic() => Markup::StartTag,
        Some(b'/') => match input.get(at + 2) {
            None => unknown,
            Some(byte) if byte.is_ascii_alphabetic() => Markup::EndTag,
            // `</>` is nothing; `</` and anything else a bogus comment.
            Some(_) => Markup::Bogus,
        },
        Some(b'!') => match (input.get(at + 2), input.get(at + 3)) {
            (Some(b'-'), Some(b'-')) => Markup::Comment,
            (None, _) | (Some(b'-'), None) if !at_end => Markup::Unknown,
            _ => Markup::Bogus,
        },
        Some(b'?') => Markup::Bogus,
        Some(_) => Markup::Text,
    }
}

/// Elements of SVG whose content is HTML (the HTML standard's integration points).
const SVG_INTEGRATION_POINTS: &[&[u8]] = &[b"foreignobject", b"desc", b"title"];

/// Elements of MathML whose content is HTML (its text integration points).
const MATH_INTEGRATION_POINTS: &[&[u8]] = &[b"mi", b"mo", b"mn", b"ms", b"mtext"];

/// The most integration points nested that are told apart (deeper ones are read as the
/// drawing's elements).
const INTEGRATION_POINTS_MAX: usize = 64;

/// The most attributes of a tag kept (the first ones; a browser keeps the first of each
/// name).
const ATTRIBUTES_MAX: usize = 256;

/// What opens a CDATA section.
const CDATA: &[u8] = b"<![CDATA[";

/// Start tags that end SVG or MathML content (the HTML standard's rules for foreign content:
/// browsers close the drawing or formula and read them as HTML).
fn leaves_foreign_content(tag: &Tag<'_>) -> bool {
    match tag.name {
        b"b" | b"big" | b"blockquote" | b"body" | b"br" | b"center" | b"code" | b"dd" | b"div"
        | b"dl" | b"dt" | b"em" | b"embed" | b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6"
        | b"head" | b"hr" | b"i" | b"img" | b"li" | b"listing" | b"menu" | b"meta" | b"nobr"
        | b"ol" | b"p" | b"pre" | b"ruby" | b"s" | b"small" | b"span" | b"strong" | b"strike"
        | b"sub" | b"sup" | b"table" | b"tt" | b"u" | b"ul" | b"var" => true,
        b"font" => tag.has("color") || tag.has("face") || tag.has("size"),
        _ => false,
    }
}

/// Just past the first `>` from `from`.
fn after_gt(input: &[u8], from: usize) -> Option<usize> {
    memchr::memchr(b'>', &input[from..]).map(|gt| from + gt + 1)
}

/// The end of a comment that starts at `at` (`<!--`): just past its `-->` or `--!>`.
fn comment_end(input: &[u8], at: usize, searched: usize) -> Option<usize> {
    // A `>` already looked at did not end it, and what comes later does not change that.
    let mut from = at + searched.max(4);
    loop {
        let gt = from + memchr::memchr(b'>', input.get(from..)?)?;
        let before = &input[at + 2..gt];
        if before.ends_with(b"--") || before.ends_with(b"--!") {
            return Some(gt + 1);
        }
        from = gt + 1;
    }
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

/// Where `text[..end]` can be cut without cutting a UTF-8 character: `end`, or the start of
/// a character it would cut.
fn char_boundary(text: &[u8], end: usize) -> usize {
    let mut start = end;
    // Back over at most three continuation bytes to the byte that leads them.
    while start > 0 && end - start < 3 && text[start - 1] & 0xC0 == 0x80 {
        start -= 1;
    }
    let Some(lead) = start.checked_sub(1).map(|at| text[at]) else {
        return end;
    };
    let length = match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return end,
    };
    if start - 1 + length > end {
        start - 1
    } else {
        end
    }
}

/// A streaming HTML tokenizer. See the module documentation.
#[derive(Debug)]
pub(crate) struct Tokenizer {
    /// Bytes held back from earlier chunks.
    held: Vec<u8>,
    state: State,
    /// Open `svg` and `math` elements (since the innermost integration point).
    foreign_depth: u32,
    /// The latest of them opened is a `math` (so MathML's integration points apply).
    in_math: bool,
    /// Open integration points: elements of a drawing or formula whose content is HTML
    /// (`foreignObject`, `desc`, `title`, `mi`, `mtext`, …), with the `foreign_depth` to
    /// return to at their end tag. At most [`INTEGRATION_POINTS_MAX`].
    integration_points: Vec<(&'static [u8], u32)>,
    /// The attributes of the tag being handed over (reused).
    attributes: Vec<(Range<usize>, Range<usize>)>,
    /// The name of the tag being handed over, in lower case (reused).
    name: Vec<u8>,
    /// Where to look for the `>` of an unfinished tag or comment held back, from its `<`:
    /// what was searched already.
    searched: usize,
    /// Text was handed over whose node has not ended yet.
    in_text: bool,
}

/// How a call to [`Tokenizer::run`] ended.
enum Ran {
    /// Everything before this offset was read; the rest waits for more input.
    Upto(usize),
    /// An unfinished tag or comment from this offset outgrew the memory allowed.
    TooLarge,
}

impl Tokenizer {
    /// The largest tag or comment held back waiting for its end.
    pub const MEMORY: usize = 1024 * 1024;

    pub fn new() -> Self {
        Tokenizer {
            held: Vec::new(),
            state: State::Data,
            foreign_depth: 0,
            in_math: false,
            integration_points: Vec::new(),
            attributes: Vec::new(),
            name: Vec::new(),
            searched: 0,
            in_text: false,
        }
    }

    /// Reads the next chunk.
    pub fn write(&mut self, chunk: &[u8], sink: &mut impl Sink) -> Result<(), TooLarge> {
        if self.held.is_empty() {
            let ran = self.run(chunk, false, sink);
            return self.hold(ran, chunk);
        }
        let mut input = std::mem::take(&mut self.held);
        input.extend_from_slice(chunk);
        let ran = self.run(&input, false, sink);
        if let Ran::Upto(read) = ran {
            input.drain(..read);
            self.held = input;
            return Ok(());
        }
        Err(TooLarge)
    }

    /// Reads what was held back, at the end of the page.
    pub fn end(&mut self, sink: &mut impl Sink) {
        let input = std::mem::take(&mut self.held);
        self.run(&input, true, sink);
    }

    /// Hands text over: nothing for an empty piece, unless it ends a node that has text.
    fn emit(&mut self, sink: &mut impl Sink, text: &[u8], ends_node: bool) {
        if text.is_empty() && !(ends_node && self.in_text) {
            return;
        }
        sink.text(text, ends_node);
        self.in_text = !ends_node;
    }

    fn hold(&mut self, ran: Ran, input: &[u8]) -> Result<(), TooLarge> {
        match ran {
            Ran::Upto(read) => {
                self.held.extend_from_slice(&input[read..]);
                Ok(())
            }
            Ran::TooLarge => Err(TooLarge),
        }
    }

    /// Tokenizes `input`; at the end of the page (`at_end`) nothing is held back.
    fn run(&mut self, input: &[u8], at_end: bool, sink: &mut impl Sink) -> Ran {
        let mut at = 0;
        loop {
            match self.state {
                State::Plaintext => {
                    let end = if at_end {
                        input.len()
                    } else {
                        char_boundary(input, input.len()).max(at)
                    };
                    self.emit(sink, &input[at..end], at_end);
                    return Ran::Upto(end);
                }
                State::RawText {
                    element,
                    mut escape,
                    skip,
                } => {
                    // Keep what could start its end tag (`</script` and what follows it is
                    // the longest sequence read) and a cut character.
                    let until = if at_end {
                        input.len()
                    } else {
                        let keep = input.len().saturating_sub(element.len() + 2).max(at);
                        char_boundary(input, keep).max(at)
                    };
                    match raw_text_end(input, at + skip, until, element, &mut escape) {
                        (Some(end_tag), _) => {
                            self.emit(sink, &input[at..end_tag], true);
                            self.state = State::Data;
                            at = end_tag;
                        }
                        (None, _) if at_end => {
                            self.emit(sink, &input[at..], true);
                            return Ran::Upto(input.len());
                        }
                        (None, read) => {
                            self.emit(sink, &input[at..until], false);
                            self.state = State::RawText {
                                element,
                                escape,
                                skip: read - until,
                            };
                            return Ran::Upto(until);
                        }
                    }
                }
                State::Data => match self.data(input, at, at_end, sink) {
                    Ok(next) => at = next,
                    Err(ran) => return ran,
                },
            }
        }
    }

    /// Reads text and markup from `at` in the data state; returns where to go on (the state
    /// may have changed), or how the run ends.
    fn data(
        &mut self,
        input: &[u8],
        at: usize,
        at_end: bool,
        sink: &mut impl Sink,
    ) -> Result<usize, Ran> {
        let mut from = at;
        let open = loop {
            let Some(found) = memchr::memchr(b'<', &input[from..]) else {
                let end = if at_end {
                    input.len()
                } else {
                    char_boundary(input, input.len()).max(at)
                };
                self.emit(sink, &input[at..end], at_end);
                return Err(Ran::Upto(end));
            };
            let open = from + found;
            match markup_at(input, open, at_end, self.foreign_depth > 0) {
                Markup::Text => from = open + 1,
                Markup::Unknown => {
                    self.emit(sink, &input[at..open], false);
                    return Err(Ran::Upto(open));
                }
                markup => break (open, markup),
            }
        };
        let (open, markup) = open;
        self.emit(sink, &input[at..open], true);
        let end = match markup {
            Markup::Comment => comment_end(input, open, self.searched),
            Markup::Cdata => {
                let start = open + CDATA.len();
                let look = (open + self.searched.saturating_sub(2)).max(start);
                let end = memchr::memmem::find(&input[look..], b"]]>").map(|end| look + end);
                match end {
                    Some(end) => self.emit(sink, &input[start..end], true),
                    // A section cut by the end of the page runs to it.
                    None if at_end => self.emit(sink, &input[start..], true),
                    None => {}
                }
                end.map(|end| end + 3)
            }
            Markup::Bogus => after_gt(input, open + self.searched.max(2)),
            Markup::StartTag | Markup::EndTag => self.tag(input, open, sink),
            Markup::Text | Markup::Unknown => unreachable!("handled above"),
        };
        match end {
            Some(end) => {
                self.searched = 0;
                Ok(end)
            }
            // A tag or comment cut by the end of the page is dropped (a comment runs to it).
            None if at_end => Err(Ran::Upto(input.len())),
            None if input.len() - open > Self::MEMORY => Err(Ran::TooLarge),
            None => {
                self.searched = input.len() - open;
                Err(Ran::Upto(open))
            }
        }
    }

    /// Reads the tag that starts at `open` and hands it over; returns just past its `>`, or
    /// `None` if it is not finished.
    ///
    /// One piece: the tokenizer's state machine for one tag (name, attributes, quotes,
    /// self-closing), as the HTML standard's tag states follow one another; its states share
    /// the cursor and the attribute being read.
    fn tag(&mut self, input: &[u8], open: usize, sink: &mut impl Sink) -> Option<usize> {
        // No `>` since the last look: still unfinished (a `>` in quotes is looked past below).
        let look_from = (open + self.searched.max(1)).min(input.len());
        memchr::memchr(b'>', &input[look_from..])?;
        let end_tag = input[open + 1] == b'/';
        let name_start = open + if end_tag { 2 } else { 1 };
        let mut at = name_start;
        while at < input.len() && !is_space(input[at]) && !matches!(input[at], b'/' | b'>') {
            at += 1;
        }
        self.name.clear();
        self.name
            .extend(input[name_start..at].iter().map(u8::to_ascii_lowercase));
        self.attributes.clear();
        let mut self_closing = false;
        loop {
            // Before an attribute's name.
            while at < input.len() && (is_space(input[at]) || input[at] == b'/') {
                self_closing = input[at] == b'/';
                at += 1;
            }
            match input.get(at) {
                None => return None,
                Some(b'>') => break,
                Some(_) => self_closing = false,
            }
            // The name (a first `=` belongs to it).
            let name_start = at;
            at += 1;
            while at < input.len()
                && !is_space(input[at])
                && !matches!(input[at], b'/' | b'>' | b'=')
            {
                at += 1;
            }
            let name = name_start..at;
            while at < input.len() && is_space(input[at]) {
                at += 1;
            }
            let value = if input.get(at) == Some(&b'=') {
                at += 1;
                while at < input.len() && is_space(input[at]) {
                    at += 1;
                }
                match input.get(at) {
                    None => return None,
                    Some(&quote @ (b'"' | b'\'')) => {
                        let close = memchr::memchr(quote, &input[at + 1..])?;
                        let value = at + 1..at + 1 + close;
                        at = value.end + 1;
                        value
                    }
                    Some(_) => {
                        let start = at;
                        while at < input.len() && !is_space(input[at]) && input[at] != b'>' {
                            at += 1;
                        }
                        start..at
                    }
                }
            } else {
                at..at
            };
            if self.attributes.len() < ATTRIBUTES_MAX {
                self.attributes.push((name, value));
            }
        }
        let end = at + 1;
        let source = &input[open..end];
        let shift = |range: &Range<usize>| range.start - open..range.end - open;
        for (name, value) in &mut self.attributes {
            *name = shift(name);
            *value = shift(value);
        }
        let name = self.name.as_slice();
        if end_tag {
            if matches!(name, b"svg" | b"math") {
                if self.foreign_depth == 0 {
                    // Inside an integration point, the drawing's end ends it too.
                    if let Some((_, depth)) = self.integration_points.pop() {
                        self.foreign_depth = depth;
                    }
                }
                self.foreign_depth = self.foreign_depth.saturating_sub(1);
            } else if matches!(name, b"br" | b"p") {
                self.foreign_depth = 0;
            } else if self.foreign_depth == 0
                && self
                    .integration_points
                    .last()
                    .is_some_and(|(point, _)| *point == name)
            {
                if let Some((_, depth)) = self.integration_points.pop() {
                    self.foreign_depth = depth;
                }
            }
            sink.end_tag(name);
            return Some(end);
        }
        let mut tag = Tag {
            name,
            source,
            attributes: &self.attributes,
            self_closing,
            foreign: self.foreign_depth > 0,
        };
        if tag.foreign && leaves_foreign_content(&tag) {
            self.foreign_depth = 0;
            tag.foreign = false;
        }
        sink.start_tag(&tag);
        if tag.has_content() {
            let points = if self.in_math {
                MATH_INTEGRATION_POINTS
            } else {
                SVG_INTEGRATION_POINTS
            };
            let point = points.iter().find(|point| **point == name);
            if let Some(point) = point.filter(|_| tag.foreign) {
                if self.integration_points.len() < INTEGRATION_POINTS_MAX {
                    self.integration_points.push((point, self.foreign_depth));
                    self.foreign_depth = 0;
                }
            } else if matches!(name, b"svg" | b"math") {
                self.foreign_depth += 1;
                self.in_math = name == b"math";
            } else if !tag.foreign {
                if name == b"plaintext" {
                    self.state = State::Plaintext;
                } else if let Some(element) = raw_text_element(name) {
                    self.state = State::RawText {
                        element,
                        escape: Escape::None,
                        skip: 0,
                    };
                }
            }
        }
        Some(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug, PartialEq)]
    struct Log(Vec<String>);

    impl Sink for Log {
        fn text(&mut self, text: &[u8], ends_node: bool) {
            let text = String::from_utf8_lossy(text);
            match self.0.last_mut() {
                Some(last) if last.starts_with("text:") && !last.ends_with('|') => {
                    last.push_str(&text);
                }
                _ => self.0.push(format!("text:{text}")),
            }
            if ends_node {
                self.0.last_mut().expect("a text").push('|');
            }
        }

        fn start_tag(&mut self, tag: &Tag<'_>) {
            let mut attributes: Vec<String> = tag
                .attributes
                .iter()
                .map(|(n, v)| {
                    format!(
                        "{}={}",
                        String::from_utf8_lossy(&tag.source[n.clone()]),
                        String::from_utf8_lossy(&tag.source[v.clone()])
                    )
                })
                .collect();
            if tag.self_closing {
                attributes.push("/".into());
            }
            if tag.foreign {
                attributes.push("foreign".into());
            }
            self.0.push(format!(
                "<{} {}>",
                String::from_utf8_lossy(tag.name),
                attributes.join(" ")
            ));
        }

        fn end_tag(&mut self, name: &[u8]) {
            self.0.push(format!("</{}>", String::from_utf8_lossy(name)));
        }
    }

    fn tokens(page: &str) -> Vec<String> {
        let mut log = Log::default();
        let mut tokenizer = Tokenizer::new();
        tokenizer.write(page.as_bytes(), &mut log).expect("small");
        tokenizer.end(&mut log);
        // Every split gives the same tokens.
        for size in 1..6 {
            let mut split = Log::default();
            let mut tokenizer = Tokenizer::new();
            for chunk in page.as_bytes().chunks(size) {
                tokenizer.write(chunk, &mut split).expect("small");
            }
            tokenizer.end(&mut split);
            assert_eq!(split, log, "chunks of {size}: {page}");
        }
        log.0
    }

    #[test]
    fn tags_attributes_and_text() {
        assert_eq!(
            tokens("a<P Class=x id = 'y z' hidden data-x=\"a>b\" /b=c>b</p >c"),
            [
                "text:a|",
                "<p Class=x id=y z hidden= data-x=a>b b=c>",
                "text:b|",
                "</p>",
                "text:c|"
            ]
        );
        assert_eq!(tokens("<br/><img src=x/>"), ["<br />", "<img src=x/>"]);
        assert_eq!(tokens("1 < 2 <3 <>"), ["text:1 < 2 <3 <>|"]);
        assert_eq!(tokens("x<"), ["text:x<|"]);
        assert_eq!(tokens("x<a href=\"y"), ["text:x|"]);
    }

    #[test]
    fn comments_doctypes_and_bogus_comments_are_skipped() {
        assert_eq!(
            tokens(
                "<!DOCTYPE html>a<!-- <p> -- > -->b<!-->c<!--->d<!-- x --!>e<?php x ?>f</ x>g</>h"
            ),
            [
                "text:a|", "text:b|", "text:c|", "text:d|", "text:e|", "text:f|", "text:g|",
                "text:h|"
            ]
        );
        assert_eq!(tokens("a<!-- never closed <p>"), ["text:a|"]);
        assert_eq!(tokens("<![CDATA[x]]>y"), ["text:y|"]);
    }

    #[test]
    fn raw_text_ends_only_at_its_own_end_tag() {
        assert_eq!(
            tokens("<script>if (a<b) x = '</p>'; </scripts></SCRIPT >t"),
            [
                "<script >",
                "text:if (a<b) x = '</p>'; </scripts>|",
                "</script>",
                "text:t|"
            ]
        );
        assert_eq!(
            tokens("<title>A <b>bold</b> title</title><textarea><p></textarea>"),
            [
                "<title >",
                "text:A <b>bold</b> title|",
                "</title>",
                "<textarea >",
                "text:<p>|",
                "</textarea>"
            ]
        );
        assert_eq!(
            tokens("<style>never closed"),
            ["<style >", "text:never closed|"]
        );
        assert_eq!(
            tokens("<plaintext><p>all</p> text"),
            ["<plaintext >", "text:<p>all</p> text|"]
        );
    }

    #[test]
    fn a_script_in_a_comment_in_a_script_does_not_end_it() {
        // The old way of writing a script from a script, as browsers read it.
        assert_eq!(
            tokens(
                "<script><!--\ndocument.write('<SCRIPT src=a.js></script><a href=/ad>');\n//--></script>t"
            ),
            [
                "<script >",
                "text:<!--\ndocument.write('<SCRIPT src=a.js></script><a href=/ad>');\n//-->|",
                "</script>",
                "text:t|"
            ]
        );
        // Without `<!--`, or once `-->` closed it, the first `</script>` ends the script.
        assert_eq!(
            tokens("<script>w('<script></script>x')</script><script><!----><script></script>y"),
            [
                "<script >",
                "text:w('<script>|",
                "</script>",
                "text:x')|",
                "</script>",
                "<script >",
                "text:<!----><script>|",
                "</script>",
                "text:y|"
            ]
        );
        // Escaped, a `</script>` still ends it.
        assert_eq!(
            tokens("<script><!-- a </script>b"),
            ["<script >", "text:<!-- a |", "</script>", "text:b|"]
        );
    }

    #[test]
    fn the_end_of_a_drawing_ends_the_html_inside_it() {
        assert_eq!(
            tokens("<svg><title>Logo</svg><title>Page</title>"),
            [
                "<svg >",
                "<title foreign>",
                "text:Logo|",
                "</svg>",
                "<title >",
                "text:Page|",
                "</title>"
            ]
        );
    }

    #[test]
    fn svg_and_math_content_is_markup_and_may_self_close() {
        assert_eq!(
            tokens("<svg><title>t<b>x</b></title><script/></svg><script/>s</script>"),
            [
                "<svg >",
                "<title foreign>",
                "text:t|",
                "<b >",
                "text:x|",
                "</b>",
                "</title>",
                "<script / foreign>",
                "</svg>",
                "<script />",
                "text:s|",
                "</script>"
            ]
        );
        assert_eq!(
            tokens("<svg/><title>x</title>"),
            ["<svg />", "<title >", "text:x|", "</title>"]
        );
        // A CDATA section is text in a drawing, a bogus comment elsewhere.
        assert_eq!(
            tokens("<svg><![CDATA[a<b>]]></svg><![CDATA[c]]>d"),
            ["<svg >", "text:a<b>|", "</svg>", "text:d|"]
        );
        // Some HTML elements end the drawing: what follows is HTML again.
        assert_eq!(
            tokens("<math><mrow><p><style>x<b></style><svg><font size=2><title>t<i>"),
            [
                "<math >",
                "<mrow foreign>",
                "<p >",
                "<style >",
                "text:x<b>|",
                "</style>",
                "<svg >",
                "<font size=2>",
                "<title >",
                "text:t<i>|"
            ]
        );
    }

    #[test]
    fn characters_are_never_cut() {
        assert_eq!(char_boundary("a\u{e9}".as_bytes(), 2), 1);
        assert_eq!(char_boundary("a\u{e9}".as_bytes(), 3), 3);
        assert_eq!(char_boundary("\u{3000}".as_bytes(), 2), 0);
        assert_eq!(char_boundary("\u{1F600}".as_bytes(), 3), 0);
        assert_eq!(char_boundary(b"\xff\x80\x80", 3), 3);
        assert_eq!(
            tokens("\u{a0}x\u{3000}<p>\u{1F600}"),
            ["text:\u{a0}x\u{3000}|", "<p >", "text:\u{1F600}|"]
        );
    }

    #[test]
    fn an_unfinished_tag_larger_than_the_memory_stops_the_tokenizer() {
        let mut tokenizer = Tokenizer::new();
        let mut log = Log::default();
        tokenizer.write(b"ok<a href=\"", &mut log).expect("small");
        let chunk = vec![b'x'; 64 * 1024];
        let mut outcome = Ok(());
        for _ in 0..20 {
            outcome = tokenizer.write(&chunk, &mut log);
            if outcome.is_err() {
                break;
            }
        }
        assert_eq!(outcome, Err(TooLarge));
        assert_eq!(log.0, ["text:ok|"]);
    }
}
