//! What a page says about itself, read from its HTML as it streams in.
//!
//! [`PageScanner`] feeds chunks to a streaming HTML tokenizer of its own (no tree, memory
//! bounded by the largest tag, not by the page; it reads only what the facts need) and collects the [`PageFacts`] the checks need: titles,
//! meta descriptions and robots directives, a meta refresh, headings, canonical and hreflang
//! links, links and what their text says, anchors search engines cannot follow, images,
//! sub-resources, JSON-LD blocks, the language, the viewport, and the visible text's size,
//! fingerprint and SimHash. It is `Send`, so a crawler can feed it chunk by chunk between
//! `.await`s.
//!
//! The scanner is total: any bytes give facts (a tag too large for the tokenizer's memory
//! marks them [`PageFacts::truncated`]), and every text it keeps is bounded (a word cut by a
//! chunk's end waits for the next chunk whole, as long as the page allows).

use serde_json::Value;

use super::markup::{Sink, Tag, Tokenizer};
use crate::text::excerpt;

/// A link found on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The `href` as written.
    pub href: String,
    /// `rel="nofollow"` (or `ugc`/`sponsored`).
    pub nofollow: bool,
}

/// A link whose text does not say where it leads (see [`is_vague_link_text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VagueLink {
    /// The `href` as written.
    pub href: String,
    /// Its text, white space collapsed (empty for a link with no text and no label).
    pub text: String,
}

/// Up to [`Sampled::KEEP`] examples of something a page has, and how many it has in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled<T> {
    /// The first examples, in document order.
    pub examples: Vec<T>,
    /// How many there are.
    pub total: u32,
}

impl<T> Default for Sampled<T> {
    fn default() -> Self {
        Sampled {
            examples: Vec::new(),
            total: 0,
        }
    }
}

impl<T> Sampled<T> {
    /// The most examples kept.
    pub const KEEP: usize = 10;

    fn push(&mut self, example: T) {
        self.total = self.total.saturating_add(1);
        if self.examples.len() < Self::KEEP {
            self.examples.push(example);
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// What the checks need to know about a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageFacts {
    /// The text of each `<title>` (white space collapsed).
    pub titles: Vec<String>,
    /// The `content` of each `<meta name="description">` (white space collapsed).
    pub meta_descriptions: Vec<String>,
    /// The directives of `<meta name="robots">` (lower case, e.g. `noindex`).
    pub robots_directives: Vec<String>,
    /// The `content` of the first `<meta http-equiv="refresh">` outside `<noscript>` and
    /// `<template>` (where browsers running scripts do not apply it), as written.
    pub meta_refresh: Option<String>,
    /// The text of each `<h1>` (white space collapsed).
    pub h1s: Vec<String>,
    /// The level (1 to 6) of every heading, in document order.
    pub heading_levels: Vec<u8>,
    /// The `href` of each `<link rel="canonical">`.
    pub canonicals: Vec<String>,
    /// `(hreflang, href)` of each `<link rel="alternate" hreflang>`.
    pub hreflangs: Vec<(String, String)>,
    /// Every `<a href>`.
    pub links: Vec<Link>,
    /// Links (not to a fragment of the page) whose text says nothing of where they lead.
    pub vague_links: Sampled<VagueLink>,
    /// Anchors meant as links that search engines cannot follow: `href="javascript:…"`, or
    /// no `href` but an `onclick` (each as a short markup excerpt).
    pub uncrawlable_links: Sampled<String>,
    /// How many `<img>` the page has.
    pub images: u32,
    /// The `src` of each `<img>` without an `alt` attribute.
    pub images_without_alt: Vec<String>,
    /// Addresses of resources the page loads (`img`, `script`, `iframe`, `source`, `video`,
    /// `audio` sources, stylesheets), as written.
    pub subresources: Vec<String>,
    /// How many `<script type="application/ld+json">` blocks the page has.
    pub json_ld_blocks: u32,
    /// What is wrong with them: one text per faulty block ("block 2: no @type").
    pub structured_data_problems: Sampled<String>,
    /// `<html lang>`.
    pub lang: Option<String>,
    /// Whether a `<meta name="viewport">` is present.
    pub has_viewport: bool,
    /// `<base href>`, which relative links resolve against.
    pub base_href: Option<String>,
    /// Words of visible text (outside `script`, `style`, `noscript` and `template`).
    pub word_count: u32,
    /// A fingerprint of the visible text (lower-cased words), equal for pages with the same
    /// text.
    pub text_fingerprint: u64,
    /// Words of the main content: visible text outside `title`, `nav`, `header`, `footer` and
    /// `aside`.
    pub content_words: u32,
    /// SimHash (64 bits) of the main content's lower-cased three-word shingles: pages whose
    /// texts are nearly the same have values that differ in few bits.
    pub content_simhash: u64,
    /// The parser gave up (a tag too large for its memory budget); facts are partial.
    pub truncated: bool,
    /// How many `<script>` elements hold or load script (not data such as JSON-LD).
    pub scripts: u32,
    /// An element script mounts an app in is empty: `<div id="root"></div>` and the like
    /// ([`MOUNT_IDS`]), or `<app-root></app-root>`.
    pub empty_mount: bool,
    /// A `<noscript>` asks for JavaScript ("enable JavaScript to run this app").
    pub noscript_asks_for_javascript: bool,
}

/// The `id`s that single-page apps mount themselves in (React, Vue, Next.js, Nuxt, Svelte,
/// Gatsby and the starter templates of the others).
pub const MOUNT_IDS: [&str; 8] = [
    "root",
    "app",
    "__next",
    "__nuxt",
    "svelte",
    "___gatsby",
    "react-root",
    "main-app",
];

/// The longest link text kept (bytes); longer texts say enough to be no vague text.
const LINK_TEXT_MAX: usize = 256;

/// The longest title or h1 text kept (bytes, as written): an unclosed `<h1>` holds no more
/// of the page than this.
const CAPTURED_MAX: usize = 64 * 1024;

/// The largest JSON-LD block read (bytes); a larger one is not checked.
const JSON_LD_MAX: usize = 256 * 1024;

/// The most JSON-LD blocks of a page that are checked.
const JSON_LD_BLOCKS_MAX: u32 = 50;

/// Link texts that say nothing of where a link leads, compared after lower-casing, collapsing
/// white space and dropping the punctuation and arrows around them (the kind of list
/// Lighthouse's link-text audit uses).
const VAGUE_LINK_TEXTS: &[&str] = &[
    "click",
    "click here",
    "click this",
    "go",
    "here",
    "learn more",
    "link",
    "more",
    "more info",
    "more information",
    "read more",
    "right here",
    "see more",
    "this",
    "this link",
    "this page",
];

/// The longest link text, as written, that [`is_vague_link_text`] is asked about: the
/// longest vague phrase with room for white space, punctuation and character references.
const VAGUE_TEXT_MAX: usize = 64;

/// Whether a link's text (white space collapsed) says nothing of where it leads: one of the
/// phrases of `VAGUE_LINK_TEXTS` ("click here", "here", "learn more", …), whatever its case
/// and the punctuation or arrows around it.
pub fn is_vague_link_text(text: &str) -> bool {
    let trimmed = text.trim_matches(|c: char| {
        c.is_whitespace() || c.is_ascii_punctuation() || "…»«›‹→←".contains(c)
    });
    let lower = trimmed.to_lowercase();
    VAGUE_LINK_TEXTS.contains(&lower.as_str())
}

/// The latest `<a>` read: its link, its text so far, and whether something else names it.
/// It ends where the next one starts, or at the end of the page (its text can only come from
/// inside it: the text handler sees text within `<a>` elements alone).
#[derive(Debug, Default)]
struct OpenAnchor {
    /// Its `href`, as the index of its [`Link`] in the facts.
    link: Option<usize>,
    text: String,
    /// An `aria-label`, `aria-labelledby` or `title` on it or inside it, or an image inside it
    /// with alternative text, names the link whatever its text says.
    labelled: bool,
}

/// The SimHash of three-word shingles, built word by word.
#[derive(Debug)]
struct SimHash {
    /// The hashes of the two words before the next one.
    previous: [u64; 2],
    words: u32,
    /// Shingles added.
    shingles: u32,
    /// Per byte of the shingles, eight counters of one byte each: lane `i` of `lanes[b]`
    /// counts the shingles with bit `8 b + i` set, since the last flush into `set`.
    lanes: [u64; 8],
    /// Shingles added to `lanes` since the last flush (a lane holds at most 255).
    in_lanes: u8,
    /// Per bit: shingles with the bit set, flushed from `lanes`.
    set: [u32; 64],
}

impl Default for SimHash {
    fn default() -> Self {
        SimHash {
            previous: [0; 2],
            words: 0,
            shingles: 0,
            lanes: [0; 8],
            in_lanes: 0,
            set: [0; 64],
        }
    }
}

/// Each byte value spread over the eight bytes of a `u64`, bit `i` of the value in byte `i`:
/// adding them counts eight bits at once.
const SPREAD: [u64; 256] = {
    let mut table = [0; 256];
    let mut value = 0;
    while value < 256 {
        let mut bit = 0;
        while bit < 8 {
            table[value] |= ((value as u64 >> bit) & 1) << (8 * bit);
            bit += 1;
        }
        value += 1;
    }
    table
};

/// SplitMix64's finaliser: a strong 64-bit mix, the same on every platform and release (the
/// standard library's hasher promises neither).
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of a word's lower-cased UTF-8: eight bytes at a time, each group mixed in.
fn word_hash(word: &str) -> u64 {
    if word.is_ascii() {
        return ascii_word_hash(word.as_bytes());
    }
    let lower: String = word.chars().flat_map(char::to_lowercase).collect();
    bytes_hash(lower.as_bytes())
}

/// The mixed lengths of words up to 63 bytes, where a word's hash starts.
const SEEDS: [u64; 64] = {
    let mut seeds = [0; 64];
    let mut length = 0;
    while length < 64 {
        seeds[length] = mix(length as u64);
        length += 1;
    }
    seeds
};

/// Where the hash of a word of `length` bytes starts: its length, mixed.
fn seed(length: usize) -> u64 {
    SEEDS
        .get(length)
        .copied()
        .unwrap_or_else(|| mix(length as u64))
}

/// Up to eight bytes as the low bytes of a little-endian `u64`.
fn group(chunk: &[u8]) -> u64 {
    // Shorter chunks in two loads that overlap (the bytes both hold land in the same place),
    // not a byte at a time: most words are shorter than eight bytes.
    let n = chunk.len();
    match chunk {
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([*a, *b, *c, *d, *e, *f, *g, *h]),
        [a, b, c, d, ..] if n > 4 => {
            let [w, x, y, z] = [chunk[n - 4], chunk[n - 3], chunk[n - 2], chunk[n - 1]];
            u64::from(u32::from_le_bytes([*a, *b, *c, *d]))
                | u64::from(u32::from_le_bytes([w, x, y, z])) << (8 * (n - 4))
        }
        [a, b, c, d] => u64::from(u32::from_le_bytes([*a, *b, *c, *d])),
        [a, b, rest @ ..] => {
            let tail = rest.first().map_or(0, |c| u64::from(*c) << 16);
            u64::from(u16::from_le_bytes([*a, *b])) | tail
        }
        [a] => u64::from(*a),
        _ => 0,
    }
}

/// [`word_hash`] of an ASCII word, lower-cased eight bytes at a time.
fn ascii_word_hash(word: &[u8]) -> u64 {
    let mut hash = seed(word.len());
    for chunk in word.chunks(8) {
        hash = mix(hash ^ ascii_lower_case(group(chunk)));
    }
    hash
}

/// Eight ASCII bytes lower-cased.
const fn ascii_lower_case(group: u64) -> u64 {
    // A high bit in each byte that is an upper-case letter: at least `A` and below `[`.
    let at_least_a = group + ONES * (0x80 - b'A' as u64);
    let past_z = group + ONES * (0x80 - b'Z' as u64 - 1);
    let upper = at_least_a & !past_z & HIGH;
    group | upper >> 2
}

/// The same hash over bytes that are already lower case (any UTF-8).
fn bytes_hash(word: &[u8]) -> u64 {
    let mut hash = seed(word.len());
    for chunk in word.chunks(8) {
        hash = mix(hash ^ group(chunk));
    }
    hash
}

impl SimHash {
    /// Adds the next words, by their [`word_hash`]: a batch, so that the counters stay in
    /// registers.
    fn add_words(&mut self, hashes: &[u64]) {
        let mut lanes = self.lanes;
        let [mut before, mut last] = self.previous;
        for &hash in hashes {
            if self.words >= 2 {
                // The three word hashes are mixed already: rotations keep their order apart.
                let shingle = mix(before.rotate_left(21) ^ last.rotate_left(42) ^ hash);
                self.shingles = self.shingles.saturating_add(1);
                for (byte, lane) in lanes.iter_mut().enumerate() {
                    *lane += SPREAD[(shingle >> (8 * byte) & 0xFF) as usize];
                }
                self.in_lanes += 1;
                if self.in_lanes == u8::MAX {
                    self.lanes = lanes;
                    self.flush();
                    lanes = self.lanes;
                }
            }
            self.words = self.words.saturating_add(1);
            [before, last] = [last, hash];
        }
        self.lanes = lanes;
        self.previous = [before, last];
    }

    fn flush(&mut self) {
        for (byte, lane) in self.lanes.iter_mut().enumerate() {
            for bit in 0..8 {
                self.set[8 * byte + bit] += ((*lane >> (8 * bit)) & 0xFF) as u32;
            }
            *lane = 0;
        }
        self.in_lanes = 0;
    }

    /// A bit is set when more than half the shingles have it.
    fn finish(&mut self) -> u64 {
        self.flush();
        self.set
            .iter()
            .enumerate()
            .filter(|(_, count)| u64::from(**count) * 2 > u64::from(self.shingles))
            .fold(0, |bits, (bit, _)| bits | 1 << bit)
    }
}

/// The elements whose being open changes what their content counts for: text that is not
/// visible (the first four), markup browsers running scripts do not apply (`noscript`,
/// `template`), text that is no main content (the last five).
const COUNTED: [&[u8]; 9] = [
    b"script",
    b"style",
    b"noscript",
    b"template",
    b"title",
    b"nav",
    b"header",
    b"footer",
    b"aside",
];

/// How many of each of [`COUNTED`] are open. An end tag closes only an element of its own
/// name, as browsers match end tags.
#[derive(Debug, Default)]
struct OpenElements([u32; COUNTED.len()]);

impl OpenElements {
    fn count(&mut self, name: &[u8]) -> Option<&mut u32> {
        let index = COUNTED.iter().position(|counted| *counted == name)?;
        Some(&mut self.0[index])
    }

    fn enter(&mut self, name: &[u8]) {
        if let Some(count) = self.count(name) {
            *count = count.saturating_add(1);
        }
    }

    fn leave(&mut self, name: &[u8]) {
        if let Some(count) = self.count(name) {
            *count = count.saturating_sub(1);
        }
    }

    /// Inside `script`, `style`, `noscript` or `template`: text not shown.
    fn hidden(&self) -> bool {
        self.0[..4].iter().any(|open| *open > 0)
    }

    /// Inside `noscript`.
    fn in_noscript(&self) -> bool {
        self.0[2] > 0
    }

    /// Inside `noscript` or `template`.
    fn inert(&self) -> bool {
        self.0[2..4].iter().any(|open| *open > 0)
    }

    /// Inside `title`, `nav`, `header`, `footer` or `aside`: text that is no main content.
    fn boilerplate(&self) -> bool {
        self.0[4..].iter().any(|open| *open > 0)
    }
}

/// Facts being collected, and the parser state that needs to outlive one handler call.
#[derive(Debug, Default)]
struct Collector {
    facts: PageFacts,
    open_elements: OpenElements,
    title: Option<String>,
    h1: Option<String>,
    anchor: Option<OpenAnchor>,
    /// Inside the latest anchor: its text is the link's.
    in_anchor: bool,
    /// The text of the JSON-LD block being read (`None` outside one).
    json_ld: Option<String>,
    /// The block being read is larger than [`JSON_LD_MAX`]: it is not checked.
    json_ld_too_large: bool,
    /// Visible text after the last white space seen, not yet counted.
    partial_word: String,
    /// The visible text's fingerprint so far.
    fingerprint: u64,
    simhash: SimHash,
    /// The mount element (its name) open with nothing in it so far.
    mount: Option<Vec<u8>>,
    /// The end of the `<noscript>` text read so far (lower case).
    noscript_tail: String,
}

/// How much `<noscript>` text is kept between chunks: `javascript` less one letter.
const NOSCRIPT_TAIL: usize = 9;

/// Elements whose text the facts keep.
#[derive(Debug, Clone, Copy)]
enum Captured {
    Title,
    H1,
}

/// A byte in each of the eight bytes of a `u64`.
const ONES: u64 = 0x0101_0101_0101_0101;

/// The high bit of each byte.
const HIGH: u64 = ONES * 0x80;

/// The high bit of each byte of `group` that is white space in ASCII text (as
/// `char::is_whitespace` has it: space, and tab to carriage return), eight bytes at once.
const fn ascii_space_bits(group: u64) -> u64 {
    let low = group & !HIGH;
    // Adding to bytes below 0x80 carries into no neighbour.
    let from_tab = low + ONES * (0x80 - 0x09);
    let past_return = low + ONES * (0x80 - 0x0E);
    let not_space = low ^ (ONES * 0x20);
    let space = !((not_space + ONES * 0x7F) | not_space);
    ((from_tab & !past_return) | space) & !group & HIGH
}

/// Eight bytes of `bytes` from `at` as a little-endian number, zero past the end (a zero byte
/// is neither white space nor beyond ASCII).
fn load(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(eight) => group(eight),
        None => group(bytes.get(at..).unwrap_or_default()),
    }
}

/// Calls `each` with the [`word_hash`] of each word of `text`, in order: split at ASCII white
/// space eight bytes at a time, and a piece with other characters split again at theirs.
fn for_each_word_hash(text: &str, mut each: impl FnMut(u64)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let words = !ascii_space_bits(load(bytes, at)) & HIGH;
        if words == 0 {
            at += 8;
            continue;
        }
        at += (words.trailing_zeros() / 8) as usize;
        if at >= bytes.len() {
            return;
        }
        let start = at;
        // Whole groups to the group holding the next white space (never in the zeros past
        // the end), noting bytes beyond ASCII.
        let mut group = load(bytes, at);
        let mut spaces = ascii_space_bits(group);
        let mut beyond_ascii = 0;
        while spaces == 0 {
            beyond_ascii |= group;
            at += 8;
            if at >= bytes.len() {
                break;
            }
            group = load(bytes, at);
            spaces = ascii_space_bits(group);
        }
        if spaces == 0 {
            at = bytes.len();
        } else {
            let in_group = (spaces.trailing_zeros() / 8) as usize;
            let rest = group & ((1 << (8 * in_group)) - 1);
            beyond_ascii |= rest;
            at += in_group;
            if at - start == in_group && beyond_ascii & HIGH == 0 {
                // A word of fewer than eight bytes (most are), already loaded: hashed here,
                // as [`ascii_word_hash`] would, without a branch on its length.
                each(mix(seed(in_group) ^ ascii_lower_case(rest)));
                continue;
            }
        }
        if beyond_ascii & HIGH == 0 {
            each(ascii_word_hash(&bytes[start..at]));
        } else {
            // Split at ASCII bytes, so at character boundaries.
            for word in text[start..at].split_whitespace() {
                each(word_hash(word));
            }
        }
    }
}

/// Appends `text` to `to` while `to` stays within `max` bytes, cutting at a character
/// boundary.
fn push_bounded(to: &mut String, text: &str, max: usize) {
    let room = max.saturating_sub(to.len());
    if text.len() <= room {
        to.push_str(text);
    } else {
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        to.push_str(&text[..end]);
    }
}

/// Where the visible text `text` can be cut so that what comes before is whole words: just
/// after its last white space character (which may take several bytes, like U+00A0), or 0.
fn after_last_whitespace(text: &str) -> usize {
    text.char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(at, c)| at + c.len_utf8())
}

impl Collector {
    /// The text being read for `what` (while one is open) and the texts read so far.
    fn slot(&mut self, what: Captured) -> (&mut Option<String>, &mut Vec<String>) {
        match what {
            Captured::Title => (&mut self.title, &mut self.facts.titles),
            Captured::H1 => (&mut self.h1, &mut self.facts.h1s),
        }
    }

    /// Keeps the text read for `what`, if one is open.
    fn close(&mut self, what: Captured) {
        let (open, done) = self.slot(what);
        if let Some(text) = open.take() {
            done.push(collapse(&text));
        }
    }

    /// Counts and hashes the words of a chunk of visible text. A chunk may end inside a word,
    /// so the last partial word waits for the next chunk (or the end of the text node).
    fn visible_text(&mut self, text: &str, last_in_node: bool) {
        if self.open_elements.hidden() {
            return;
        }
        let cut = if last_in_node {
            text.len()
        } else {
            after_last_whitespace(text)
        };
        if cut == 0 && !last_in_node {
            self.partial_word.push_str(text);
            return;
        }
        let (complete, rest) = text.split_at(cut);
        if self.partial_word.is_empty() {
            self.count_words(complete);
        } else {
            let mut words = std::mem::take(&mut self.partial_word);
            words.push_str(complete);
            self.count_words(&words);
            words.clear();
            self.partial_word = words;
        }
        self.partial_word.push_str(rest);
    }

    /// Counts and hashes whole words, taken in batches.
    fn count_words(&mut self, text: &str) {
        // What a text node counts for is the same for all its words.
        let content = !self.open_elements.boilerplate();
        let mut batch = [0; 64];
        let mut in_batch = 0;
        for_each_word_hash(text, |hash| {
            batch[in_batch] = hash;
            in_batch += 1;
            if in_batch == batch.len() {
                self.count_batch(&batch, content);
                in_batch = 0;
            }
        });
        self.count_batch(&batch[..in_batch], content);
    }

    fn count_batch(&mut self, hashes: &[u64], content: bool) {
        let words = u32::try_from(hashes.len()).unwrap_or(u32::MAX);
        self.facts.word_count = self.facts.word_count.saturating_add(words);
        self.fingerprint = hashes.iter().fold(self.fingerprint, |fingerprint, hash| {
            (fingerprint.rotate_left(17) ^ hash).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        });
        if content {
            self.facts.content_words = self.facts.content_words.saturating_add(words);
            self.simhash.add_words(hashes);
        }
    }

    /// Ends the anchor being read, if any: a link whose text says nothing is kept.
    fn close_anchor(&mut self) {
        let Some(anchor) = self.anchor.take() else {
            return;
        };
        let Some(link) = anchor.link.and_then(|index| self.facts.links.get(index)) else {
            return;
        };
        let target = link.href.as_str();
        // A text this long says more than any vague phrase; a label names the link.
        if target.is_empty()
            || target.starts_with('#')
            || is_javascript(target)
            || anchor.labelled
            || anchor.text.trim().len() > VAGUE_TEXT_MAX
        {
            return;
        }
        let text = collapse(&anchor.text);
        if text.is_empty() || is_vague_link_text(&text) {
            self.facts.vague_links.push(VagueLink {
                href: excerpt(target, 200),
                text,
            });
        }
    }

    /// Ends the JSON-LD block being read, if any, and records what is wrong with it.
    fn close_json_ld(&mut self) {
        let Some(text) = self.json_ld.take() else {
            return;
        };
        self.facts.json_ld_blocks = self.facts.json_ld_blocks.saturating_add(1);
        let block = self.facts.json_ld_blocks;
        if block > JSON_LD_BLOCKS_MAX || std::mem::take(&mut self.json_ld_too_large) {
            return;
        }
        if let Some(problem) = json_ld_problem(&text) {
            self.facts
                .structured_data_problems
                .push(format!("block {block}: {problem}"));
        }
    }
}

/// Whether a `<script type>` (lower case) is one browsers run: empty, `module`, or a
/// JavaScript MIME type.
fn is_script_type(kind: &str) -> bool {
    kind.is_empty()
        || kind == "module"
        || kind
            .strip_prefix("text/")
            .or_else(|| kind.strip_prefix("application/"))
            .is_some_and(|subtype| {
                matches!(
                    subtype.split(';').next().unwrap_or_default().trim(),
                    "javascript" | "ecmascript" | "x-javascript" | "x-ecmascript" | "jscript"
                )
            })
}

/// Whether a start tag is an element single-page apps mount in: an `id` of [`MOUNT_IDS`], or
/// Angular's `<app-root>`.
fn is_mount(tag: &Tag<'_>) -> bool {
    tag.name == b"app-root" || attribute(tag, "id").is_some_and(|id| MOUNT_IDS.contains(&id.trim()))
}

/// Whether an `href` is a `javascript:` URL.
fn is_javascript(href: &str) -> bool {
    href.get(..11)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("javascript:"))
}

/// What is wrong with a JSON-LD block, if anything: it does not parse as JSON, or an item
/// lacks `@context` or `@type` (an item with a `@graph` is typed by its graph's items).
pub fn json_ld_problem(text: &str) -> Option<String> {
    if text.trim().is_empty() {
        return Some("is empty".to_owned());
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return Some(format!("is not valid JSON ({error})")),
    };
    let items = match &value {
        Value::Array(items) if items.is_empty() => return Some("is an empty list".to_owned()),
        Value::Array(items) => items.iter().collect(),
        _ => vec![&value],
    };
    for (index, item) in items.iter().enumerate() {
        let which = if items.len() > 1 {
            format!("item {} ", index + 1)
        } else {
            String::new()
        };
        let Value::Object(item) = item else {
            return Some(format!("{which}is not a JSON object"));
        };
        if !item.contains_key("@context") {
            return Some(format!("{which}has no @context"));
        }
        let typed = |object: &serde_json::Map<String, Value>| match object.get("@type") {
            Some(Value::String(name)) => !name.trim().is_empty(),
            Some(Value::Array(names)) => !names.is_empty(),
            _ => false,
        };
        if typed(item) {
            continue;
        }
        match item.get("@graph") {
            Some(Value::Array(graph)) => {
                if let Some(position) = graph
                    .iter()
                    .position(|node| !node.as_object().is_some_and(typed))
                {
                    return Some(format!(
                        "{which}has a @graph whose node {} has no @type",
                        position + 1
                    ));
                }
            }
            _ => return Some(format!("{which}has no @type")),
        }
    }
    None
}

/// Collapses runs of white space to one space and trims, after decoding character
/// references (the parser hands text over as written: `&amp;` is `&`).
fn collapse(text: &str) -> String {
    html_escape::decode_html_entities(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The value of an attribute, character references decoded (`href="/a?x=1&amp;y=2"` is
/// `/a?x=1&y=2`), as a browser reads it.
fn attribute(tag: &Tag<'_>, name: &str) -> Option<String> {
    let value = String::from_utf8_lossy(tag.raw(name)?);
    Some(if value.contains('&') {
        html_escape::decode_html_entities(&value).into_owned()
    } else {
        value.into_owned()
    })
}

/// An attribute's value without the white space around it, reusing its allocation when
/// there is none.
fn trimmed(value: String) -> String {
    if value.trim().len() == value.len() {
        value
    } else {
        value.trim().to_owned()
    }
}

/// Whether a tag has a non-blank value for one of `names`.
fn has_value(tag: &Tag<'_>, names: &[&str]) -> bool {
    names.iter().any(|name| {
        tag.raw(name)
            .is_some_and(|value| !value.trim_ascii().is_empty())
    })
}

/// Whether the tag names a link of its own: `aria-label`, `aria-labelledby` or `title`.
fn names_itself(tag: &Tag<'_>) -> bool {
    has_value(tag, &["aria-label", "aria-labelledby", "title"])
}

impl Sink for Collector {
    fn text(&mut self, raw: &[u8], ends_node: bool) {
        let text = match std::str::from_utf8(raw) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(raw),
        };
        if let Some(json_ld) = self.json_ld.as_mut() {
            // A block past the limit is not kept, nor checked.
            if json_ld.len() + text.len() > JSON_LD_MAX {
                self.json_ld_too_large = true;
                json_ld.clear();
            } else if !self.json_ld_too_large {
                json_ld.push_str(&text);
            }
        }
        if self.mount.is_some() && text.chars().any(|c| !c.is_whitespace()) {
            self.mount = None;
        }
        if self.open_elements.in_noscript() && !self.facts.noscript_asks_for_javascript {
            // The word may be cut by a chunk's end: the last few letters wait for the next.
            self.noscript_tail.push_str(&text.to_ascii_lowercase());
            if self.noscript_tail.contains("javascript") {
                self.facts.noscript_asks_for_javascript = true;
            }
            let keep = self.noscript_tail.len().saturating_sub(NOSCRIPT_TAIL);
            let mut cut = keep;
            while !self.noscript_tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.noscript_tail.drain(..cut);
        }
        for open in [&mut self.title, &mut self.h1].into_iter().flatten() {
            push_bounded(open, &text, CAPTURED_MAX);
        }
        if self.in_anchor {
            if let Some(anchor) = self.anchor.as_mut() {
                push_bounded(&mut anchor.text, &text, LINK_TEXT_MAX);
            }
        }
        self.visible_text(&text, ends_node);
    }

    fn start_tag(&mut self, tag: &Tag<'_>) {
        let name = tag.name;
        // Anything inside the mount element means it is not empty.
        self.mount = None;
        if tag.has_content() && !tag.foreign && is_mount(tag) {
            self.mount = Some(name.to_vec());
        }
        // Something inside a link that names it.
        let labels = |tag| names_itself(tag) || (name == b"img" && has_value(tag, &["alt"]));
        if self.in_anchor && name != b"a" && labels(tag) {
            if let Some(anchor) = self.anchor.as_mut() {
                anchor.labelled = true;
            }
        }
        match name {
            b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6" => {
                self.facts.heading_levels.push(name[1] - b'0');
                // A heading ends the h1 it would be in (browsers do not nest headings).
                self.close(Captured::H1);
                // An SVG or MathML heading is no heading of the page's.
                if name == b"h1" && !tag.foreign {
                    self.open(Captured::H1);
                }
            }
            b"meta" => self.meta(tag),
            b"link" => self.link(tag),
            b"a" => self.anchor(tag),
            b"img" => self.image(tag),
            b"script" => self.script(tag),
            b"iframe" | b"source" | b"video" | b"audio" => {
                if let Some(src) = attribute(tag, "src") {
                    self.facts.subresources.push(src.trim().to_owned());
                }
            }
            b"html" => {
                if let Some(lang) = attribute(tag, "lang") {
                    self.facts.lang = Some(lang.trim().to_owned());
                }
            }
            b"base" if self.facts.base_href.is_none() => {
                self.facts.base_href = attribute(tag, "href").map(|h| h.trim().to_owned());
            }
            _ => {}
        }
        if !tag.has_content() {
            return;
        }
        self.open_elements.enter(name);
        // A drawing's `<title>` names the drawing, not the page.
        if name == b"title" && !tag.foreign {
            self.open(Captured::Title);
        }
    }

    fn end_tag(&mut self, name: &[u8]) {
        if self.mount.as_deref() == Some(name) {
            self.facts.empty_mount = true;
        }
        self.mount = None;
        match name {
            b"h1" => self.close(Captured::H1),
            b"a" => self.in_anchor = false,
            b"script" => self.close_json_ld(),
            b"title" => self.close(Captured::Title),
            _ => {}
        }
        self.open_elements.leave(name);
    }
}

impl Collector {
    /// Opens the text kept for `what`; one still open is kept as it is.
    fn open(&mut self, what: Captured) {
        self.close(what);
        *self.slot(what).0 = Some(String::new());
    }

    fn meta(&mut self, tag: &Tag<'_>) {
        let name = attribute(tag, "name")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let content = attribute(tag, "content");
        match name.trim() {
            "description" => self
                .facts
                .meta_descriptions
                .push(collapse(content.as_deref().unwrap_or_default())),
            "robots" => self.facts.robots_directives.extend(
                content
                    .as_deref()
                    .unwrap_or_default()
                    .split(',')
                    .map(|d| d.trim().to_ascii_lowercase())
                    .filter(|d| !d.is_empty()),
            ),
            "viewport" => self.facts.has_viewport = true,
            _ => {}
        }
        let refresh = attribute(tag, "http-equiv")
            .is_some_and(|equiv| equiv.trim().eq_ignore_ascii_case("refresh"));
        if refresh && !self.open_elements.inert() && self.facts.meta_refresh.is_none() {
            self.facts.meta_refresh = Some(excerpt(content.as_deref().unwrap_or_default(), 2048));
        }
    }

    fn link(&mut self, tag: &Tag<'_>) {
        let (Some(rel), Some(href)) = (attribute(tag, "rel"), attribute(tag, "href")) else {
            return;
        };
        let rel = rel.to_ascii_lowercase();
        let rels: Vec<&str> = rel.split_ascii_whitespace().collect();
        if rels.contains(&"canonical") {
            self.facts.canonicals.push(href.trim().to_owned());
        }
        if rels.contains(&"alternate") {
            if let Some(lang) = attribute(tag, "hreflang") {
                self.facts
                    .hreflangs
                    .push((lang.trim().to_owned(), href.trim().to_owned()));
            }
        }
        if rels.contains(&"stylesheet") {
            self.facts.subresources.push(href.trim().to_owned());
        }
    }

    fn anchor(&mut self, tag: &Tag<'_>) {
        let href = attribute(tag, "href").map(trimmed);
        // The latest anchor ends here (an `<a>` inside another, invalid but written, ends the
        // outer one too, as browsers read it).
        self.close_anchor();
        // A named anchor (`<a name>`, a target) or one given a role is no link, and one in a
        // `<template>` or `<noscript>` is not what a browser shows.
        if !self.open_elements.inert() && !has_value(tag, &["name", "role"]) {
            match href.as_deref() {
                Some(href) if is_javascript(href) => self
                    .facts
                    .uncrawlable_links
                    .push(format!("<a href=\"{}\">", excerpt(href, 80))),
                None | Some("") if tag.has("onclick") => self
                    .facts
                    .uncrawlable_links
                    .push("<a onclick> without an href".to_owned()),
                _ => {}
            }
        }
        let link = href.map(|href| {
            let nofollow = tag.raw("rel").is_some_and(|rel| {
                rel.split(|b| b.is_ascii_whitespace()).any(|r| {
                    [&b"nofollow"[..], b"ugc", b"sponsored"]
                        .iter()
                        .any(|kind| r.eq_ignore_ascii_case(kind))
                })
            });
            self.facts.links.push(Link { href, nofollow });
            self.facts.links.len() - 1
        });
        self.anchor = Some(OpenAnchor {
            link: link.filter(|_| !self.open_elements.inert()),
            text: String::new(),
            labelled: names_itself(tag),
        });
        self.in_anchor = tag.has_content();
    }

    fn image(&mut self, tag: &Tag<'_>) {
        let src = attribute(tag, "src").map(trimmed);
        self.facts.images = self.facts.images.saturating_add(1);
        if !tag.has("alt") {
            self.facts
                .images_without_alt
                .push(src.clone().unwrap_or_default());
        }
        self.facts.subresources.extend(src);
    }

    fn script(&mut self, tag: &Tag<'_>) {
        if let Some(src) = attribute(tag, "src") {
            self.facts.subresources.push(src.trim().to_owned());
        }
        let kind = attribute(tag, "type").map(|kind| kind.trim().to_ascii_lowercase());
        if kind.as_deref().is_none_or(is_script_type) {
            self.facts.scripts = self.facts.scripts.saturating_add(1);
        }
        let json_ld = kind.as_deref() == Some("application/ld+json");
        if json_ld && tag.has_content() {
            self.close_json_ld();
            self.json_ld = Some(String::new());
            self.json_ld_too_large = false;
        }
    }
}

/// Reads a page's HTML chunk by chunk. See the module documentation.
#[derive(Debug)]
pub struct PageScanner {
    tokenizer: Option<Tokenizer>,
    collector: Collector,
}

impl Default for PageScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl PageScanner {
    /// A scanner for one page.
    pub fn new() -> Self {
        PageScanner {
            tokenizer: Some(Tokenizer::new()),
            collector: Collector::default(),
        }
    }

    /// Feeds the next chunk of the body.
    pub fn write(&mut self, chunk: &[u8]) {
        if let Some(tokenizer) = self.tokenizer.as_mut() {
            // A NUL is read as U+FFFD, as HTML parsers read it in titles and attributes.
            let chunk = crate::text::nul_bytes_replaced(chunk);
            if tokenizer.write(&chunk, &mut self.collector).is_err() {
                self.tokenizer = None;
                self.collector.facts.truncated = true;
            }
        }
    }

    /// The facts, once the whole body was fed.
    pub fn finish(mut self) -> PageFacts {
        if let Some(mut tokenizer) = self.tokenizer.take() {
            tokenizer.end(&mut self.collector);
        }
        let collector = &mut self.collector;
        // A JSON-LD block cut short by a tokenizer that gave up is not what the page says.
        if collector.facts.truncated {
            collector.json_ld = None;
        }
        // A title, h1, link or JSON-LD block left open by the end of the page still counts.
        collector.close(Captured::Title);
        collector.close(Captured::H1);
        collector.close_anchor();
        collector.close_json_ld();
        collector.visible_text("", true);
        collector.facts.text_fingerprint = collector.fingerprint;
        collector.facts.content_simhash = collector.simhash.finish();
        std::mem::take(&mut collector.facts)
    }
}

/// The facts of a whole page held in memory.
pub fn scan(body: &[u8]) -> PageFacts {
    let mut scanner = PageScanner::new();
    scanner.write(body);
    scanner.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html>
<html lang="en-GB"><head>
  <title>  Blue   widgets |
   Acme </title>
  <meta name="Description" content="All about  blue widgets.">
  <meta name="robots" content="NOINDEX, follow">
  <meta name="viewport" content="width=device-width">
  <link rel="canonical" href="https://acme.example/widgets/blue">
  <link rel="alternate" hreflang="de" href="https://acme.example/de/widgets/blue">
  <link rel="stylesheet" href="http://cdn.example/site.css">
  <base href="https://acme.example/widgets/">
  <script>var words = "not visible text at all";</script>
  <style>p { color: blue }</style>
</head><body>
  <h1>Blue <em>widgets</em></h1>
  <p>Three visible words.</p>
  <h3>Skipped a level</h3>
  <a href="/about">About</a> <a href=" red " rel="nofollow ugc">Red</a>
  <img src="/a.png" alt="A"> <img src="/b.png">
  <script src="/app.js"></script>
</body></html>"#;

    #[test]
    fn character_references_are_decoded_as_a_browser_reads_them() {
        let facts = scan(
            b"<html><head><title>Fish &amp; chips &lt;fresh&gt; &eacute;t&#233; &#x27;24</title>\
              <meta name=\"description\" content=\"Caf&eacute; &quot;Chez&quot;\"></head>\
              <body><h1>A &amp; B</h1><a href=\"/menu?size=l&amp;salt=no\">Menu</a></body></html>",
        );
        assert_eq!(facts.titles, ["Fish & chips <fresh> été '24"]);
        assert_eq!(facts.meta_descriptions, ["Café \"Chez\""]);
        assert_eq!(facts.h1s, ["A & B"]);
        assert_eq!(facts.links[0].href, "/menu?size=l&salt=no");
    }

    #[test]
    fn collects_the_facts_of_a_page() {
        let facts = scan(PAGE.as_bytes());
        assert_eq!(facts.titles, ["Blue widgets | Acme"]);
        assert_eq!(facts.meta_descriptions, ["All about blue widgets."]);
        assert_eq!(facts.robots_directives, ["noindex", "follow"]);
        assert!(facts.has_viewport);
        assert_eq!(facts.canonicals, ["https://acme.example/widgets/blue"]);
        assert_eq!(
            facts.hreflangs,
            [(
                "de".to_owned(),
                "https://acme.example/de/widgets/blue".to_owned()
            )]
        );
        assert_eq!(facts.h1s, ["Blue widgets"]);
        assert_eq!(facts.heading_levels, [1, 3]);
        assert_eq!(
            facts.links,
            [
                Link {
                    href: "/about".into(),
                    nofollow: false
                },
                Link {
                    href: "red".into(),
                    nofollow: true
                },
            ]
        );
        assert_eq!(facts.images, 2);
        assert_eq!(facts.images_without_alt, ["/b.png"]);
        assert_eq!(
            facts.subresources,
            ["http://cdn.example/site.css", "/a.png", "/b.png", "/app.js"]
        );
        assert_eq!(facts.lang.as_deref(), Some("en-GB"));
        assert_eq!(
            facts.base_href.as_deref(),
            Some("https://acme.example/widgets/")
        );
        // Title, h1, paragraph, h3 and the two link texts; not the script or the style.
        assert_eq!(facts.word_count, 4 + 2 + 3 + 3 + 2);
        assert!(!facts.truncated);
    }

    #[test]
    fn chunk_boundaries_change_nothing() {
        let whole = scan(PAGE.as_bytes());
        for size in [1, 7, 64] {
            let mut scanner = PageScanner::default();
            for chunk in PAGE.as_bytes().chunks(size) {
                scanner.write(chunk);
            }
            assert_eq!(scanner.finish(), whole, "chunks of {size}");
        }
    }

    #[test]
    fn equal_text_has_an_equal_fingerprint() {
        let a = scan(b"<p>Hello   World</p><script>x</script>");
        let b = scan(b"<div>hello</div> <span>world</span>");
        let c = scan(b"<p>Hello there</p>");
        assert_eq!(a.text_fingerprint, b.text_fingerprint);
        assert_ne!(a.text_fingerprint, c.text_fingerprint);
    }

    #[test]
    fn an_empty_or_broken_page_gives_empty_facts() {
        let facts = scan(b"");
        assert_eq!(facts.word_count, 0);
        assert!(facts.titles.is_empty());
        let facts = scan(b"<title>Open<p>never closed");
        assert_eq!(facts.titles.len(), 1);
    }

    #[test]
    fn multi_byte_white_space_splits_words_across_chunks() {
        // U+00A0 (two bytes in UTF-8) and U+3000 (three) end words like a space does, and a
        // chunk may end anywhere, even inside one of them.
        let page = "<p>Price: 100\u{a0}EUR and\u{3000}more\u{a0}</p><p>t\u{a0}</p>";
        let whole = scan(page.as_bytes());
        assert_eq!(whole.word_count, 6);
        for size in 1..8 {
            let mut scanner = PageScanner::new();
            for chunk in page.as_bytes().chunks(size) {
                scanner.write(chunk);
            }
            assert_eq!(scanner.finish(), whole, "chunks of {size}");
        }
    }

    #[test]
    fn a_meta_refresh_outside_noscript_is_kept() {
        let facts = scan(
            b"<noscript><meta http-equiv=\"refresh\" content=\"0; url=/nojs\"></noscript>\
              <META HTTP-EQUIV=\"Refresh\" CONTENT=\"5;URL='/next'\">\
              <meta http-equiv=\"refresh\" content=\"0; url=/second\">",
        );
        assert_eq!(facts.meta_refresh.as_deref(), Some("5;URL='/next'"));
        assert_eq!(scan(b"<p>no refresh</p>").meta_refresh, None);
    }

    #[test]
    fn links_that_say_nothing_and_links_robots_cannot_follow() {
        let facts = scan(
            "<a href=\"/a\">Click here</a> <a href=\"/b\"> Read more&nbsp;» </a>\
             <a href=\"/c\"></a> <a href=\"/d\"><img src=\"x.png\" alt=\"Our shop\"></a>\
             <a href=\"/e\" aria-label=\"Cart\"><svg></svg></a> <a href=\"/f\">Pricing plans</a>\
             <a href=\"#top\">here</a> <a href=\"/g\"><span title=\"Help\"></span></a>\
             <a href=\"/h\">More <a href=\"/i\">here</a>\
             <a onclick=\"go()\">Go</a> <a href=\" JavaScript:void(0)\">Menu</a>\
             <a name=\"anchor\"></a> <a id=\"x\"></a> <a role=\"button\" onclick=\"f()\">B</a>\
             <a href=\"\" onclick=\"g()\">Empty</a>"
                .as_bytes(),
        );
        let vague: Vec<(&str, &str)> = facts
            .vague_links
            .examples
            .iter()
            .map(|l| (l.href.as_str(), l.text.as_str()))
            .collect();
        assert_eq!(
            vague,
            [
                ("/a", "Click here"),
                ("/b", "Read more »"),
                ("/c", ""),
                ("/h", "More"),
                ("/i", "here")
            ]
        );
        assert_eq!(facts.vague_links.total, 5);
        assert_eq!(
            facts.uncrawlable_links.examples,
            [
                "<a onclick> without an href",
                "<a href=\"JavaScript:void(0)\">",
                "<a onclick> without an href"
            ]
        );
        for text in ["CLICK HERE!", "→ read more", "more…", "This"] {
            assert!(is_vague_link_text(text), "{text}");
        }
        for text in ["Read more about pricing", "Here be dragons", "Moreover"] {
            assert!(!is_vague_link_text(text), "{text}");
        }
    }

    #[test]
    fn json_ld_blocks_are_checked() {
        let facts = scan(
            b"<script type=\"application/ld+json\">{\"@context\":\"https://schema.org\",\"@type\":\"Thing\"}</script>\
              <script type=\" Application/LD+JSON \">{\"@type\": \"Thing\"}</script>\
              <script type=\"application/ld+json\">{\"@context\": \"https://schema.org\", </script>\
              <script type=\"application/ld+json\">[{\"@context\":\"https://schema.org\",\"@graph\":[{\"@type\":\"A\"},{}]}]</script>\
              <script type=\"text/javascript\">var x = {</script><script>{</script>",
        );
        assert_eq!(facts.json_ld_blocks, 4);
        let problems = &facts.structured_data_problems.examples;
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert_eq!(problems[0], "block 2: has no @context");
        assert!(
            problems[1].starts_with("block 3: is not valid JSON ("),
            "{problems:?}"
        );
        assert_eq!(
            problems[2],
            "block 4: has a @graph whose node 2 has no @type"
        );
        for (text, problem) in [
            ("  ", Some("is empty")),
            ("[]", Some("is an empty list")),
            ("42", Some("is not a JSON object")),
            ("{\"@context\": {}, \"@type\": []}", Some("has no @type")),
            (
                "[{\"@context\": 1, \"@type\": \"A\"}, {\"@type\": \"B\"}]",
                Some("item 2 has no @context"),
            ),
            ("{\"@context\": \"x\", \"@type\": [\"A\", \"B\"]}", None),
        ] {
            assert_eq!(json_ld_problem(text).as_deref(), problem, "{text}");
        }
    }

    #[test]
    fn near_texts_have_near_simhashes_and_others_do_not() {
        let words: Vec<String> = (0..400)
            .map(|i| format!("word{}", i * 7 % 101 + i))
            .collect();
        let text = words.join(" ");
        let page =
            |body: &str| scan(format!("<nav>menu items here</nav><main>{body}</main>").as_bytes());
        let a = page(&text);
        let b = page(&text.replacen("word14", "changed", 1));
        let c = page(
            &(0..400)
                .map(|i| format!("other{i}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        assert_eq!(a.content_words, 400);
        assert_eq!(a.word_count, 403);
        assert!((a.content_simhash ^ b.content_simhash).count_ones() <= 5);
        assert!((a.content_simhash ^ c.content_simhash).count_ones() > 16);
        // The navigation is no main content.
        let d =
            scan(format!("<nav>a completely different menu</nav><main>{text}</main>").as_bytes());
        assert_eq!(d.content_simhash, a.content_simhash);
    }

    #[test]
    fn words_hash_the_same_whatever_their_case_and_script() {
        for (a, b) in [
            ("Hello", "hELLO"),
            ("A-Za-z@[`{", "a-za-z@[`{"),
            ("LongerThanEightBytes", "longerthaneightbytes"),
            ("ÉTÉ", "été"),
        ] {
            assert_eq!(word_hash(a), word_hash(b), "{a} {b}");
        }
        assert_ne!(word_hash("at"), word_hash("@t"));
        assert_ne!(word_hash("a"), word_hash("a\0"));
        assert_eq!(word_hash("plain"), bytes_hash(b"plain"));
        // White space as `char::is_whitespace` has it, in ASCII text or not.
        assert_eq!(scan(b"a\x0Bb c").word_count, 3);
        assert_eq!(scan("a\x0Bb c\u{a0}d".as_bytes()).word_count, 4);
    }

    #[test]
    fn foreign_and_unclosed_elements_do_not_skew_the_facts() {
        // A drawing's title is not the page's; a self-closing script in SVG hides nothing.
        let facts = scan(
            b"<html><head><title>The page</title><body>\
              <svg><title>An icon</title><script/><style/></svg><p>one two three</p>",
        );
        assert_eq!(facts.titles, ["The page"]);
        assert_eq!(facts.word_count, 2 + 2 + 3);
        // A head left open (valid HTML) does not make the body boilerplate; titles (the
        // page's, the icon's) are no main content.
        assert_eq!(facts.content_words, 3);
    }

    #[test]
    fn labelled_hidden_and_oversized_things_are_not_findings() {
        let mut big =
            String::from("{\"@context\": \"https://schema.org\", \"@type\": \"Thing\", \"x\": \"");
        big.push_str(&"\u{e9}".repeat(JSON_LD_MAX / 2));
        big.push_str("\"}");
        let page = format!(
            "<a href=\"/a\" aria-label=\"Pricing plans\">Read more</a>\
             <template><a href=\"/b\">click here</a><a onclick=\"x()\">x</a></template>\
             <script type=\"application/ld+json\">{big}</script>"
        );
        let mut scanner = PageScanner::new();
        for chunk in page.as_bytes().chunks(4096) {
            scanner.write(chunk);
        }
        let facts = scanner.finish();
        assert!(facts.vague_links.is_empty(), "{:?}", facts.vague_links);
        assert!(
            facts.uncrawlable_links.is_empty(),
            "{:?}",
            facts.uncrawlable_links
        );
        assert_eq!(facts.json_ld_blocks, 1);
        assert!(facts.structured_data_problems.is_empty());
        // The link in the template is still a link the crawl may follow.
        assert_eq!(facts.links.len(), 2);
    }

    #[test]
    fn the_simhash_counts_every_bit_of_every_shingle() {
        // Against a plain count, over more shingles than a byte lane holds.
        let hashes: Vec<u64> = (0..1_000_u64).map(|i| mix(i.wrapping_mul(7_919))).collect();
        let mut simhash = SimHash::default();
        // In batches of every size, as text nodes give them.
        for batch in hashes.chunks(7) {
            simhash.add_words(batch);
        }
        let shingles: Vec<u64> = hashes
            .windows(3)
            .map(|w| mix(w[0].rotate_left(21) ^ w[1].rotate_left(42) ^ w[2]))
            .collect();
        let expected = (0..64).fold(0_u64, |bits, bit| {
            let set = shingles.iter().filter(|s| *s >> bit & 1 == 1).count();
            if set * 2 > shingles.len() {
                bits | 1 << bit
            } else {
                bits
            }
        });
        assert_eq!(simhash.finish(), expected);
    }

    #[test]
    fn a_giant_tag_stops_the_scan_without_failing() {
        let mut body = b"<title>t</title><a href=\"".to_vec();
        body.extend(std::iter::repeat_n(b'x', 2 * Tokenizer::MEMORY));
        body.extend(b"\">");
        let mut scanner = PageScanner::new();
        for chunk in body.chunks(16 * 1024) {
            scanner.write(chunk);
        }
        let facts = scanner.finish();
        assert!(facts.truncated);
        assert_eq!(facts.titles, ["t"]);
    }

    /// The words of `text` as the byte-at-a-time reader saw them: split at ASCII white
    /// space, and a piece with other characters split again at theirs.
    fn words_one_byte_at_a_time(text: &str) -> Vec<u64> {
        let space = |byte: &u8| b" \t\n\x0B\x0C\r".contains(byte);
        text.as_bytes()
            .split(space)
            .filter(|piece| !piece.is_empty())
            .flat_map(|piece| {
                let piece = std::str::from_utf8(piece).expect("split at ASCII bytes");
                piece.split_whitespace().map(word_hash).collect::<Vec<_>>()
            })
            .collect()
    }

    fn words(text: &str) -> Vec<u64> {
        let mut hashes = Vec::new();
        for_each_word_hash(text, |hash| hashes.push(hash));
        hashes
    }

    #[test]
    fn space_bits_match_ascii_white_space_in_every_byte() {
        for byte in 0..=255_u8 {
            let space = b" \t\n\x0B\x0C\r".contains(&byte);
            for at in 0..8 {
                // The byte among neighbours of both kinds.
                for fill in [b'a', b' ', 0xC2] {
                    let mut bytes = [fill; 8];
                    bytes[at] = byte;
                    let bits = ascii_space_bits(u64::from_le_bytes(bytes));
                    assert_eq!(bits >> (8 * at + 7) & 1 == 1, space, "{byte:#x} at {at}");
                }
            }
        }
    }

    #[test]
    fn a_short_group_is_its_bytes_zero_extended() {
        let bytes = [0x81, 0x02, 0xF3, 0x44, 0x05, 0xA6, 0x77, 0x08];
        for n in 0..=8 {
            let expected = bytes[..n]
                .iter()
                .rev()
                .fold(0, |group, byte| group << 8 | u64::from(*byte));
            assert_eq!(group(&bytes[..n]), expected, "{n} bytes");
        }
    }

    #[test]
    fn words_are_split_at_every_kind_of_white_space() {
        let text = "  Price:\u{A0}100 EUR\t\x0B\x0Cé\u{2003}été  lowercase\r\nLOWERCASE abcdefghijklmnopq ";
        assert_eq!(words(text), words_one_byte_at_a_time(text));
        assert_eq!(words(text).len(), 8);
        assert_eq!(words(text)[5], words(text)[6]);
        assert!(words("").is_empty());
        assert!(words(" \t\n        ").is_empty());
        assert_eq!(words("x"), [word_hash("x")]);
    }

    proptest::proptest! {
        #[test]
        fn words_eight_bytes_at_a_time_are_the_words_byte_by_byte(
            text in "([a-zA-Z0-9]{0,12}|[ \t\n\x0B\x0C\r]{0,9}|\u{A0}|\u{2003}|é|\u{301}|\x00){0,40}",
        ) {
            proptest::prop_assert_eq!(words(&text), words_one_byte_at_a_time(&text));
        }

        #[test]
        fn any_text_is_split_as_byte_by_byte(text in proptest::prelude::any::<String>()) {
            proptest::prop_assert_eq!(words(&text), words_one_byte_at_a_time(&text));
        }
    }
}
