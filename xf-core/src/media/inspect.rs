//! Checking uploaded media by its content once the bytes have arrived, and reading its facts.
//!
//! Uploads can be several GiB and live in a blob store, so everything here reads through
//! [`RangeRead`] and only fetches what it needs: for a video, the top-level box headers of the
//! ISO-BMFF file (never the media data) and the whole `moov` box (capped at 64 MiB); for an
//! image, its first bytes and, for a JPEG, the segment headers up to the frame header.
//!
//! The box reader is our own (about 250 lines): it only descends into the boxes it needs
//! (`moov`, `trak`, `mdia`, `minf`, `stbl`, `stsd`, `mvex`; `stsz`/`stz2` are read for their
//! sample count, never their tables, and `moof` fragments not at all) and skips every other box
//! whatever it holds, so the QuickTime-specific or vendor boxes of real-world files never make
//! it fail.
//!
//! What the headers declare is held to sane limits whatever the platforms (pixels a side and in
//! all, video samples against the file's length and a frame rate; see [`MAX_IMAGE_PIXELS`] and
//! the constants beside it), so a decompression bomb is a [`Refused::OverLimit`] naming the
//! limit, before anything is stored.
//!
//! Nothing here panics on any input: all offsets are checked and sizes read from the file are
//! never trusted for an allocation beyond the caps.

use std::fmt;

pub use crate::model::media::{ImageFacts, ImageFormat, VideoContainer, VideoFacts};
use crate::text::group_digits;

/// Random access to stored bytes.
#[async_trait::async_trait]
pub trait RangeRead: Send + Sync {
    /// Total length in bytes.
    fn len(&self) -> u64;

    /// Whether there are no bytes at all.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Up to `len` bytes from `offset` (fewer only at the end of the data).
    async fn read_at(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>>;
}

/// Bytes held in memory (handy for small uploads and tests).
#[async_trait::async_trait]
impl RangeRead for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    async fn read_at(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let bytes = self.as_slice();
        let start = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
        let end = start.saturating_add(len).min(bytes.len());
        Ok(bytes[start..end].to_vec())
    }
}

/// Why content was refused: the message names what is wrong, for a 400 on the `file` field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// The content is not what the extension says.
    #[error("{0}")]
    Mismatch(String),
    /// The content is cut short: a box or chunk runs past the end, the `moov` box is missing…
    #[error("{0}")]
    Truncated(String),
    /// The content cannot be made sense of: garbage, no video track, zero dimensions…
    #[error("{0}")]
    Unparseable(String),
    /// The extension is not accepted for this kind of media.
    #[error("{0}")]
    Unsupported(String),
    /// The content declares more than any upload is accepted with, whatever the platform:
    /// pixels (see [`MAX_IMAGE_PIXELS`], [`MAX_VIDEO_PIXELS`]) or video samples (see
    /// [`MAX_VIDEO_SAMPLES`], [`MAX_FRAME_RATE`]). The message names the limit and the declared
    /// value.
    #[error("{0}")]
    OverLimit(String),
    /// The stored upload could not be read.
    #[error("the stored upload could not be read: {0}")]
    Io(String),
}

/// The lower-cased extension of a file name ("clip.MP4" -> Some("mp4")), None without one.
///
/// Only the last path component counts (`/` and `\` both separate), and a name that only starts
/// with a dot (".mp4") or ends with one ("clip.") has none.
pub fn extension_of(file_name: &str) -> Option<String> {
    let name = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() || ext.is_empty() {
        return None;
    }
    Some(ext.to_ascii_lowercase())
}

// ---------------------------------------------------------------------------------------------
// Sane limits
//
// Headers are cheap to forge: a 100-byte PNG can declare 100,000 × 100,000 pixels (40 GB once
// decoded), an MP4 a track of 4,294,967,295 samples. These limits hold for every upload,
// whatever the platforms, and are checked while inspecting, so such a file is refused with a
// 400 before anything is stored or sent. They sit far above anything a camera, a phone or an
// editor writes and above every maximum the platforms document (see `rules`), so they never
// refuse media a platform would take.

/// The longest side of an accepted image, in pixels.
///
/// A round figure under 32,767 (signed 16-bit coordinates: the longest side of Chrome's and
/// Firefox's canvases, and of many decoders). Camera frames are far shorter (a 100-megapixel
/// medium-format frame is 11,648 × 8,736), and so are ordinary stitched panoramas. Without it
/// [`MAX_IMAGE_PIXELS`] alone would let a 178,956,970 × 1 strip through, a single row of
/// 716 MB once decoded.
pub const MAX_IMAGE_SIDE: u32 = 30_000;

/// The most pixels in an accepted image.
///
/// Pillow's threshold for a decompression bomb: it warns above `Image.MAX_IMAGE_PIXELS`
/// (89,478,485) and raises `DecompressionBombError` above twice that, this figure; about
/// 716 MB once decoded to RGBA. A 12,000 × 9,000 (108-megapixel) frame passes; a phone's
/// 200-megapixel mode (16,320 × 12,240) does not, but no platform here would take it: the
/// largest image any of them takes is LinkedIn's 36,152,320 pixels (TikTok takes 1080p).
pub const MAX_IMAGE_PIXELS: u64 = 178_956_970;

/// The longest side of an accepted video, in pixels (as displayed, and as coded in the video
/// track's sample description).
///
/// Twice 8K DCI's 8,192 width, and under the longest side H.264 and HEVC allow at their top
/// level (6.2): √(8 × 35,651,584), about 16,880. The longest any platform here documents is
/// TikTok's 4,096; YouTube takes 8K (7,680 × 4,320).
pub const MAX_VIDEO_SIDE: u32 = 16_384;

/// The most pixels in a frame of an accepted video.
///
/// The largest picture H.264 and HEVC allow at any level (levels 6 to 6.2: `MaxFS` of 139,264
/// macroblocks of 256 pixels for H.264, `MaxLumaPs` for HEVC), so no conforming decoder of
/// either takes more; 8K DCI (8,192 × 4,320 = 35,389,440) fits. Other codecs (ProRes,
/// MPEG-4 Part 2) are held to the same.
pub const MAX_VIDEO_PIXELS: u64 = 35_651_584;

/// The highest average frame rate of an accepted video track, in frames per second (its
/// sample count over its media duration).
///
/// Phones record slow motion at up to 240 fps, and Instagram and TikTok take at most 60 fps;
/// 1,000 leaves room for any camera an upload comes from, so a track claiming more frames a
/// second is corrupt or hostile.
pub const MAX_FRAME_RATE: u64 = 1_000;

/// The most samples (frames) in an accepted video track: 12 hours, the longest upload any
/// platform here takes (YouTube's), at [`MAX_FRAME_RATE`].
///
/// It bounds a track whose duration is not stated; besides, each sample takes at least one
/// byte of the file, so no track may have more samples than the file has bytes.
pub const MAX_VIDEO_SAMPLES: u64 = 12 * 3600 * MAX_FRAME_RATE;

/// A duration in milliseconds as seconds, without trailing zeros: "2 s", "12.345 s".
fn seconds(ms: u64) -> String {
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

/// Refuses an image declaring more than [`MAX_IMAGE_SIDE`] or [`MAX_IMAGE_PIXELS`].
fn check_image_size(width: u32, height: u32) -> Result<(), Refused> {
    let pixels = u64::from(width) * u64::from(height);
    if width.max(height) > MAX_IMAGE_SIDE || pixels > MAX_IMAGE_PIXELS {
        return Err(Refused::OverLimit(format!(
            "the image declares {width}×{height} pixels; at most {} pixels a side and {} pixels \
             in all are accepted",
            group_digits(u64::from(MAX_IMAGE_SIDE)),
            group_digits(MAX_IMAGE_PIXELS)
        )));
    }
    Ok(())
}

/// Refuses a video size (`what` declares it) over [`MAX_VIDEO_SIDE`] or [`MAX_VIDEO_PIXELS`].
fn check_video_size(what: &str, width: u32, height: u32) -> Result<(), Refused> {
    let pixels = u64::from(width) * u64::from(height);
    if width.max(height) > MAX_VIDEO_SIDE || pixels > MAX_VIDEO_PIXELS {
        return Err(Refused::OverLimit(format!(
            "{what} declares {width}×{height} pixels; at most {} pixels a side and {} pixels a \
             frame are accepted",
            group_digits(u64::from(MAX_VIDEO_SIDE)),
            group_digits(MAX_VIDEO_PIXELS)
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reading

/// The most of a `moov` box that is read.
const MAX_MOOV_BYTES: u64 = 64 * 1024 * 1024;
/// The most top-level boxes walked (the `moov` box must be among them).
const MAX_TOP_LEVEL_BOXES: usize = 1024;
/// The most JPEG segments walked before the frame header.
const MAX_JPEG_SEGMENTS: usize = 4096;
/// How many leading bytes are looked at to recognise content.
const SNIFF_LEN: usize = 512;
/// The read size while walking top-level boxes.
const BOX_WINDOW: usize = 4096;
/// The read size while walking JPEG segments (one read covers most headers).
const JPEG_WINDOW: usize = 64 * 1024;

fn io_error(error: std::io::Error) -> Refused {
    Refused::Io(error.to_string())
}

/// Up to `len` bytes from `offset`, fewer only at the end of the data; loops over short reads.
async fn read_fully(data: &dyn RangeRead, offset: u64, len: usize) -> Result<Vec<u8>, Refused> {
    let available = data.len().saturating_sub(offset);
    let want = usize::try_from(available).map_or(len, |a| a.min(len));
    let mut out = Vec::with_capacity(want);
    while out.len() < want {
        let pos = offset.saturating_add(out.len() as u64);
        let chunk = data
            .read_at(pos, want - out.len())
            .await
            .map_err(io_error)?;
        if chunk.is_empty() {
            break;
        }
        let take = chunk.len().min(want - out.len());
        out.extend_from_slice(&chunk[..take]);
    }
    Ok(out)
}

/// A read-ahead window over a [`RangeRead`], so that walking many small headers does not cost
/// one read each.
struct Reader<'a> {
    data: &'a dyn RangeRead,
    total: u64,
    window: usize,
    start: u64,
    buf: Vec<u8>,
}

impl fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("total", &self.total)
            .field("start", &self.start)
            .finish()
    }
}

impl<'a> Reader<'a> {
    fn new(data: &'a dyn RangeRead, window: usize) -> Self {
        Reader {
            data,
            total: data.len(),
            window,
            start: 0,
            buf: Vec::new(),
        }
    }

    /// Up to `n` bytes from `offset`, fewer only at the end of the data.
    async fn get(&mut self, offset: u64, n: usize) -> Result<&[u8], Refused> {
        if offset >= self.total {
            return Ok(&[]);
        }
        let end = offset.saturating_add(n as u64).min(self.total);
        let buf_end = self.start.saturating_add(self.buf.len() as u64);
        if offset < self.start || end > buf_end {
            self.buf = read_fully(self.data, offset, n.max(self.window)).await?;
            self.start = offset;
        }
        // `offset - start` is at most `buf.len()` here, so it fits in a usize.
        let from = usize::try_from(offset - self.start).unwrap_or(usize::MAX);
        let to = from.saturating_add(n).min(self.buf.len());
        Ok(self.buf.get(from..to).unwrap_or(&[]))
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(3)?)?;
    Some(u32::from(s[0]) | (u32::from(s[1]) << 8) | (u32::from(s[2]) << 16))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn fourcc_at(b: &[u8], at: usize) -> Option<[u8; 4]> {
    b.get(at..at.checked_add(4)?)?.try_into().ok()
}

/// A four-character code for display: printable ASCII kept, anything else as `?`.
fn fourcc_str(code: &[u8; 4]) -> String {
    code.iter()
        .map(|&b| {
            if b == b' ' || b.is_ascii_graphic() {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}

fn normalise(extension: &str) -> String {
    extension
        .trim()
        .trim_start_matches('.')
        .to_ascii_lowercase()
}

fn shown_extension(ext: &str) -> String {
    if ext.is_empty() {
        "a file without an extension".to_owned()
    } else {
        format!(".{ext}")
    }
}

fn mismatch(ext: &str, expected: &str, found: &str) -> Refused {
    Refused::Mismatch(format!("a .{ext} file must be {expected}; this is {found}"))
}

// ---------------------------------------------------------------------------------------------
// Recognising content

/// What an ISO-BMFF `ftyp` box says the file is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IsoKind {
    Mp4,
    QuickTime,
    Audio,
    Heif,
    Avif,
    Other([u8; 4]),
}

impl IsoKind {
    fn describe(&self) -> String {
        match self {
            IsoKind::Mp4 => "an MP4 video".to_owned(),
            IsoKind::QuickTime => "a QuickTime (MOV) video".to_owned(),
            IsoKind::Audio => "an audio-only MPEG-4 file (M4A)".to_owned(),
            IsoKind::Heif => "a HEIF/HEIC image".to_owned(),
            IsoKind::Avif => "an AVIF image".to_owned(),
            IsoKind::Other(brand) => {
                format!(
                    "an ISO media file of brand '{}', not a video",
                    fourcc_str(brand)
                )
            }
        }
    }
}

/// The brands of the MP4 family accepted for `.mp4`.
fn is_mp4_brand(brand: &[u8; 4]) -> bool {
    matches!(
        brand,
        b"isom"
            | b"iso2"
            | b"iso3"
            | b"iso4"
            | b"iso5"
            | b"iso6"
            | b"iso7"
            | b"iso8"
            | b"iso9"
            | b"mp41"
            | b"mp42"
            | b"mp71"
            | b"avc1"
            | b"M4V "
            | b"M4VH"
            | b"M4VP"
            | b"dash"
            | b"mmp4"
            | b"f4v "
            | b"3gp4"
            | b"3gp5"
            | b"3gp6"
            | b"3g2a"
            | b"cmfc"
            | b"cmf2"
    )
}

/// Classifies an `ftyp` payload (major brand, minor version, compatible brands).
fn classify_ftyp(payload: &[u8]) -> Option<IsoKind> {
    let major = fourcc_at(payload, 0)?;
    let compatible: Vec<[u8; 4]> = payload
        .get(8..)
        .unwrap_or(&[])
        .chunks_exact(4)
        .filter_map(|c| c.try_into().ok())
        .collect();
    Some(match &major {
        b"qt  " => IsoKind::QuickTime,
        b if is_mp4_brand(b) => IsoKind::Mp4,
        b"M4A " | b"M4B " | b"M4P " | b"F4A " | b"F4B " => IsoKind::Audio,
        b"avif" | b"avis" => IsoKind::Avif,
        b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx" | b"mif1" | b"msf1" => {
            IsoKind::Heif
        }
        _ if compatible.contains(b"qt  ") => IsoKind::QuickTime,
        _ if compatible.iter().any(is_mp4_brand) => IsoKind::Mp4,
        _ => IsoKind::Other(major),
    })
}

/// Whether the first bytes look like text (UTF-8 without control characters but whitespace).
fn looks_like_text(head: &[u8]) -> bool {
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A character cut by the end of the sniffed bytes is fine.
        Err(e) if e.error_len().is_none() => match std::str::from_utf8(&head[..e.valid_up_to()]) {
            Ok(text) => text,
            Err(_) => return false,
        },
        Err(_) => return false,
    };
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0c'))
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
const JPEG_MAGIC: &[u8] = &[0xFF, 0xD8, 0xFF];

/// What the first bytes of a file are, in words, for a mismatch message.
fn sniff(head: &[u8]) -> Option<String> {
    let found = if head.starts_with(PNG_SIGNATURE) {
        "a PNG image"
    } else if head.starts_with(JPEG_MAGIC) {
        "a JPEG image"
    } else if head.starts_with(b"RIFF") && head.len() >= 12 {
        match &head[8..12] {
            b"WEBP" => "a WebP image",
            b"AVI " => "an AVI video",
            b"WAVE" => "a WAV audio file",
            _ => "a RIFF file",
        }
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        "a GIF image"
    } else if head.starts_with(b"%PDF-") {
        "a PDF document"
    } else if head.starts_with(b"PK\x03\x04")
        || head.starts_with(b"PK\x05\x06")
        || head.starts_with(b"PK\x07\x08")
    {
        "a ZIP archive"
    } else if head.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
        "a Matroska/WebM video"
    } else if head.starts_with(b"II*\0") || head.starts_with(b"MM\0*") {
        "a TIFF image"
    } else if head.starts_with(b"ID3") {
        "an MP3 audio file"
    } else if head.get(4..8) == Some(b"ftyp".as_slice()) {
        let size = be32(head, 0)
            .and_then(|s| usize::try_from(s).ok())
            .unwrap_or(0);
        let payload = head.get(8..size.min(head.len()).max(8)).unwrap_or(&[]);
        return Some(classify_ftyp(payload)?.describe());
    } else if looks_like_text(head) {
        "plain text"
    } else {
        return None;
    };
    Some(found.to_owned())
}

// ---------------------------------------------------------------------------------------------
// Video

/// The header of a box in the file.
#[derive(Debug)]
struct BoxHeader {
    kind: [u8; 4],
    header_len: u64,
    end: u64,
}

/// Reads the header of the top-level box at `offset` (< total) and checks it fits in the file.
async fn box_header(reader: &mut Reader<'_>, offset: u64) -> Result<BoxHeader, Refused> {
    let remaining = reader.total.saturating_sub(offset);
    let b = reader.get(offset, 16).await?;
    let (Some(size32), Some(kind)) = (be32(b, 0), fourcc_at(b, 4)) else {
        return Err(Refused::Truncated(format!(
            "the file is cut short: it ends inside a box header at byte {offset}"
        )));
    };
    let (size, header_len) = match size32 {
        0 => (remaining, 8),
        1 => {
            let Some(large) = be64(b, 8) else {
                return Err(Refused::Truncated(format!(
                    "the file is cut short: it ends inside the '{}' box header at byte {offset}",
                    fourcc_str(&kind)
                )));
            };
            if large < 16 {
                return Err(Refused::Unparseable(format!(
                    "the '{}' box at byte {offset} has an invalid size ({large})",
                    fourcc_str(&kind)
                )));
            }
            (large, 16)
        }
        2..=7 => {
            return Err(Refused::Unparseable(format!(
                "the '{}' box at byte {offset} has an invalid size ({size32})",
                fourcc_str(&kind)
            )))
        }
        n => (u64::from(n), 8),
    };
    if size > remaining {
        return Err(Refused::Truncated(format!(
            "the file is cut short: the '{}' box at byte {offset} declares {size} bytes but only \
             {remaining} remain",
            fourcc_str(&kind)
        )));
    }
    Ok(BoxHeader {
        kind,
        header_len,
        end: offset + size,
    })
}

/// The child boxes of an in-memory box payload: `(kind, payload)`.
///
/// Fewer than 8 trailing bytes (QuickTime sometimes ends a list with a 32-bit zero) are ignored.
#[derive(Debug)]
struct Children<'a> {
    buf: &'a [u8],
    pos: usize,
    parent: &'static str,
}

fn children<'a>(buf: &'a [u8], parent: &'static str) -> Children<'a> {
    Children {
        buf,
        pos: 0,
        parent,
    }
}

impl<'a> Iterator for Children<'a> {
    type Item = Result<([u8; 4], &'a [u8]), Refused>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.buf.get(self.pos..)?;
        let size32 = be32(rest, 0)?;
        let kind = fourcc_at(rest, 4)?;
        let (size, header_len) = match size32 {
            0 => (Some(rest.len()), 8),
            1 => (be64(rest, 8).and_then(|s| usize::try_from(s).ok()), 16),
            n => (usize::try_from(n).ok(), 8),
        };
        match size.filter(|&s| s >= header_len && s <= rest.len()) {
            Some(size) => {
                self.pos = self.pos.saturating_add(size);
                Some(Ok((kind, &rest[header_len..size])))
            }
            None => {
                self.pos = self.buf.len();
                Some(Err(Refused::Unparseable(format!(
                    "the '{}' box inside '{}' has an invalid size or runs past its end",
                    fourcc_str(&kind),
                    self.parent
                ))))
            }
        }
    }
}

fn find_child<'a>(
    buf: &'a [u8],
    parent: &'static str,
    kind: &[u8; 4],
) -> Result<Option<&'a [u8]>, Refused> {
    for child in children(buf, parent) {
        let (k, payload) = child?;
        if &k == kind {
            return Ok(Some(payload));
        }
    }
    Ok(None)
}

/// `(timescale, duration)` of an `mvhd` or `mdhd` payload; an all-ones duration counts as 0.
fn header_times(body: &[u8], name: &str) -> Result<(u32, u64), Refused> {
    let parsed = match body.first() {
        Some(1) => be32(body, 20)
            .zip(be64(body, 24))
            .map(|(t, d)| (t, if d == u64::MAX { 0 } else { d })),
        Some(_) => be32(body, 12)
            .zip(be32(body, 16))
            .map(|(t, d)| (t, if d == u32::MAX { 0 } else { u64::from(d) })),
        None => None,
    };
    parsed.ok_or_else(|| Refused::Unparseable(format!("the {name} box is too short")))
}

fn to_ms(duration: u64, timescale: u32) -> Option<u64> {
    if timescale == 0 {
        return None;
    }
    let ms = u128::from(duration) * 1000 / u128::from(timescale);
    Some(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// The clockwise rotation a `tkhd` matrix `(a, b, c, d)` describes, by the signs of its terms.
fn rotation_of(a: i32, b: i32, c: i32, d: i32) -> u16 {
    match (a.signum(), b.signum(), c.signum(), d.signum()) {
        (0, 1, -1, 0) => 90,
        (-1, 0, 0, -1) => 180,
        (0, -1, 1, 0) => 270,
        _ => 0,
    }
}

/// What one `trak` box says.
#[derive(Debug, Default)]
struct Track {
    handler: [u8; 4],
    enabled: bool,
    width: u32,
    height: u32,
    rotation: u16,
    duration_ms: u64,
    /// The media header's timescale and duration (in that timescale; 0 when not stated).
    timescale: u32,
    duration: u64,
    codec: Option<[u8; 4]>,
    entry_width: u32,
    entry_height: u32,
    /// The sample count of the sample size box (`stsz` or `stz2`); 0 without one.
    samples: u64,
}

impl Track {
    /// The average frame rate in thousandths of a frame per second, rounded: the sample count
    /// over the media duration; `None` when either is unknown.
    fn frame_rate_millis(&self) -> Option<u64> {
        if self.samples == 0 || self.duration == 0 || self.timescale == 0 {
            return None;
        }
        let ticks = u128::from(self.samples) * u128::from(self.timescale) * 1000;
        let duration = u128::from(self.duration);
        let millis = (ticks * 2 + duration) / (duration * 2);
        Some(u64::try_from(millis).unwrap_or(u64::MAX))
    }
}

fn parse_tkhd(body: &[u8], track: &mut Track) -> Result<(), Refused> {
    let short = || Refused::Unparseable("a tkhd box is too short".to_owned());
    let version = *body.first().ok_or_else(short)?;
    let flags = be32(body, 0).ok_or_else(short)? & 0x00FF_FFFF;
    // version/flags, times, track id, reserved, duration; then reserved (8), layer, alternate
    // group, volume, reserved (2 each), the 3x3 matrix and width/height as 16.16 fixed point.
    let base = if version == 1 { 36 } else { 24 };
    let matrix = base + 16;
    let term = |i: usize| {
        be32(body, matrix + 4 * i)
            .map(|v| v as i32)
            .ok_or_else(short)
    };
    let (a, b, c, d) = (term(0)?, term(1)?, term(3)?, term(4)?);
    track.enabled = flags & 1 != 0;
    track.rotation = rotation_of(a, b, c, d);
    track.width = be32(body, matrix + 36).ok_or_else(short)? >> 16;
    track.height = be32(body, matrix + 40).ok_or_else(short)? >> 16;
    Ok(())
}

fn parse_stsd(body: &[u8], track: &mut Track) {
    // version/flags, entry count, then the entries; the first one is what the track holds.
    if be32(body, 4).unwrap_or(0) == 0 {
        return;
    }
    let Some(entry) = be32(body, 8).and_then(|s| usize::try_from(s).ok()) else {
        return;
    };
    let Some(code) = fourcc_at(body, 12) else {
        return;
    };
    track.codec = Some(code);
    // VisualSampleEntry: 8-byte header, 6 reserved, data reference index (2), 16 reserved,
    // then width and height (u16 each).
    if entry >= 36 {
        track.entry_width = be16(body, 40).map_or(0, u32::from);
        track.entry_height = be16(body, 42).map_or(0, u32::from);
    }
}

/// The sample count of a `stsz` payload (version/flags, sample size, count) or a `stz2` one
/// (version/flags, reserved, field size, count): at the same offset in both; 0 when cut short.
fn sample_count(body: &[u8]) -> u64 {
    be32(body, 8).map_or(0, u64::from)
}

/// Reads the sample table: the first sample description, and the sample count.
fn parse_stbl(body: &[u8], track: &mut Track) -> Result<(), Refused> {
    let mut described = false;
    for child in children(body, "stbl") {
        let (kind, payload) = child?;
        match &kind {
            b"stsd" if !described => {
                described = true;
                parse_stsd(payload, track);
            }
            b"stsz" | b"stz2" => track.samples = sample_count(payload),
            _ => {}
        }
    }
    Ok(())
}

fn parse_trak(body: &[u8]) -> Result<Track, Refused> {
    let mut track = Track::default();
    for child in children(body, "trak") {
        let (kind, payload) = child?;
        match &kind {
            b"tkhd" => parse_tkhd(payload, &mut track)?,
            b"mdia" => {
                for child in children(payload, "mdia") {
                    let (kind, payload) = child?;
                    match &kind {
                        b"mdhd" => {
                            let (timescale, duration) = header_times(payload, "mdhd")?;
                            track.duration_ms = to_ms(duration, timescale).unwrap_or(0);
                            (track.timescale, track.duration) = (timescale, duration);
                        }
                        b"hdlr" => track.handler = fourcc_at(payload, 8).unwrap_or_default(),
                        b"minf" => {
                            if let Some(stbl) = find_child(payload, "minf", b"stbl")? {
                                parse_stbl(stbl, &mut track)?;
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(track)
}

/// Keeps `candidate` when there is none yet or it is enabled and the kept one is not.
fn prefer(kept: &mut Option<Track>, candidate: Track) {
    if kept
        .as_ref()
        .is_none_or(|k| !k.enabled && candidate.enabled)
    {
        *kept = Some(candidate);
    }
}

/// Refuses a video track over the sane limits: its sizes (as displayed and as coded), and its
/// sample count against [`MAX_VIDEO_SAMPLES`], the file's length and [`MAX_FRAME_RATE`].
fn check_video_track(track: &Track, file_len: u64) -> Result<(), Refused> {
    check_video_size("the video", track.width, track.height)?;
    check_video_size(
        "the video's sample description",
        track.entry_width,
        track.entry_height,
    )?;
    let samples = track.samples;
    if samples > MAX_VIDEO_SAMPLES {
        return Err(Refused::OverLimit(format!(
            "the video track declares {} samples; at most {} are accepted (12 hours at {} \
             frames per second)",
            group_digits(samples),
            group_digits(MAX_VIDEO_SAMPLES),
            group_digits(MAX_FRAME_RATE)
        )));
    }
    if samples > file_len {
        return Err(Refused::OverLimit(format!(
            "the video track declares {} samples but the file has {} bytes; each sample takes \
             at least one byte",
            group_digits(samples),
            group_digits(file_len)
        )));
    }
    if let Some(millis) = track.frame_rate_millis() {
        if millis > MAX_FRAME_RATE * 1000 {
            return Err(Refused::OverLimit(format!(
                "the video track declares {} samples over {} ({} frames per second); at most {} \
                 frames per second are accepted",
                group_digits(samples),
                seconds(to_ms(track.duration, track.timescale).unwrap_or(0)),
                group_digits(millis / 1000),
                group_digits(MAX_FRAME_RATE)
            )));
        }
    }
    Ok(())
}

fn parse_moov(
    moov: &[u8],
    container: VideoContainer,
    file_len: u64,
) -> Result<VideoFacts, Refused> {
    let mut movie: Option<(u32, u64)> = None;
    let mut fragment_duration: Option<u64> = None;
    let mut video: Option<Track> = None;
    let mut audio: Option<Track> = None;
    let mut longest_ms = 0u64;
    for child in children(moov, "moov") {
        let (kind, payload) = child?;
        match &kind {
            b"mvhd" if movie.is_none() => movie = Some(header_times(payload, "mvhd")?),
            b"trak" => {
                let track = parse_trak(payload)?;
                longest_ms = longest_ms.max(track.duration_ms);
                match &track.handler {
                    b"vide" => {
                        check_video_track(&track, file_len)?;
                        prefer(&mut video, track);
                    }
                    b"soun" => prefer(&mut audio, track),
                    _ => {}
                }
            }
            b"mvex" => {
                if let Some(mehd) = find_child(payload, "mvex", b"mehd")? {
                    fragment_duration = match mehd.first() {
                        Some(1) => be64(mehd, 4),
                        Some(_) => be32(mehd, 4).map(u64::from),
                        None => None,
                    };
                }
            }
            _ => {}
        }
    }
    let (timescale, duration) = movie
        .ok_or_else(|| Refused::Unparseable("the video's moov box has no mvhd box".to_owned()))?;
    if timescale == 0 {
        return Err(Refused::Unparseable(
            "the video's mvhd box has a zero timescale".to_owned(),
        ));
    }
    let mut duration_ms = to_ms(duration, timescale).unwrap_or(0);
    if duration_ms == 0 {
        duration_ms = longest_ms;
    }
    if duration_ms == 0 {
        duration_ms = fragment_duration
            .and_then(|d| to_ms(d, timescale))
            .unwrap_or(0);
    }

    let video =
        video.ok_or_else(|| Refused::Unparseable("the video has no video track".to_owned()))?;
    let codec = video.codec.ok_or_else(|| {
        Refused::Unparseable("the video track has no sample description".to_owned())
    })?;
    let (mut width, mut height) = (video.width, video.height);
    if width == 0 || height == 0 {
        (width, height) = (video.entry_width, video.entry_height);
    }
    if width == 0 || height == 0 {
        return Err(Refused::Unparseable(
            "the video track has a zero width or height".to_owned(),
        ));
    }
    if matches!(video.rotation, 90 | 270) {
        (width, height) = (height, width);
    }
    // At most MAX_FRAME_RATE * 1000 here: check_video_track refused anything faster.
    let frame_rate_millis = video
        .frame_rate_millis()
        .map_or(0, |millis| u32::try_from(millis).unwrap_or(u32::MAX));
    Ok(VideoFacts {
        container,
        duration_ms,
        width,
        height,
        rotation: video.rotation,
        video_codec: fourcc_str(&codec),
        audio_codec: audio.and_then(|a| a.codec).map(|c| fourcc_str(&c)),
        frame_rate_millis,
    })
}

/// Checks uploaded video content against its extension ("mp4" or "mov") and reads its facts.
///
/// Walks the top-level boxes with range reads (never reading media data), checks the `ftyp`
/// brands against the extension, then reads and parses the `moov` box wherever it is.
/// Leading `wide`/`free`/`skip` boxes are accepted before `ftyp`, and a `.mov` may be a classic
/// QuickTime movie without `ftyp` (starting with `wide`, `mdat`, `moov` or `pnot`).
///
/// Every video track is held to [`MAX_VIDEO_SIDE`], [`MAX_VIDEO_PIXELS`], [`MAX_VIDEO_SAMPLES`],
/// the file's length (a sample takes at least a byte) and [`MAX_FRAME_RATE`].
///
/// One piece: the walk over the container's top-level boxes is one loop whose bounds (the
/// file's length, the boxes seen, the `moov` found) every branch reads and moves.
pub async fn inspect_video(extension: &str, data: &dyn RangeRead) -> Result<VideoFacts, Refused> {
    let ext = normalise(extension);
    let (container, expected) = match ext.as_str() {
        "mp4" => (VideoContainer::Mp4, "an MP4 video"),
        "mov" => (VideoContainer::Mov, "a QuickTime (MOV) video"),
        _ => {
            return Err(Refused::Unsupported(format!(
                "a video must be an .mp4 or .mov file, not {}",
                shown_extension(&ext)
            )))
        }
    };
    let mut reader = Reader::new(data, BOX_WINDOW);
    let total = reader.total;
    if total == 0 {
        return Err(Refused::Truncated("the file is empty".to_owned()));
    }
    let head = reader.get(0, SNIFF_LEN).await?.to_vec();
    let leading = fourcc_at(&head, 4);
    let starts_like_movie = matches!(
        leading.as_ref(),
        Some(b"ftyp" | b"wide" | b"free" | b"skip" | b"mdat" | b"moov" | b"pnot")
    );
    if !starts_like_movie {
        return Err(match sniff(&head) {
            Some(found) => mismatch(&ext, expected, &found),
            None if head.len() < 8 => Refused::Truncated(format!(
                "the file is too short to be a video ({} bytes)",
                head.len()
            )),
            None => Refused::Unparseable(format!(
                "a .{ext} file must be {expected}; this file is not a recognised video"
            )),
        });
    }

    let mut kind: Option<IsoKind> = None;
    let mut moov: Option<(u64, u64)> = None;
    let mut offset = 0u64;
    let mut boxes = 0usize;
    while offset < total {
        if boxes == MAX_TOP_LEVEL_BOXES {
            if moov.is_some() {
                break;
            }
            return Err(Refused::Unparseable(format!(
                "the video has no moov box among its first {MAX_TOP_LEVEL_BOXES} boxes"
            )));
        }
        boxes += 1;
        let header = box_header(&mut reader, offset).await?;
        let payload_at = offset + header.header_len;
        let payload_len = header.end - payload_at;
        if kind.is_none() {
            let decided = match &header.kind {
                b"wide" | b"free" | b"skip" => None,
                b"ftyp" => {
                    let n = usize::try_from(payload_len.min(4096)).unwrap_or(4096);
                    let payload = reader.get(payload_at, n).await?;
                    Some(classify_ftyp(payload).ok_or_else(|| {
                        Refused::Unparseable("the video's ftyp box is too short".to_owned())
                    })?)
                }
                // A classic QuickTime movie, which has no ftyp box.
                b"mdat" | b"moov" | b"pnot" => Some(IsoKind::QuickTime),
                other => {
                    return Err(Refused::Unparseable(format!(
                        "a .{ext} file must be {expected}; this file has a '{}' box before its \
                         ftyp box",
                        fourcc_str(other)
                    )))
                }
            };
            if let Some(decided) = decided {
                let found = if decided == IsoKind::QuickTime && header.kind != *b"ftyp" {
                    "a QuickTime (MOV) video without an ftyp box".to_owned()
                } else {
                    decided.describe()
                };
                match (&decided, container) {
                    (IsoKind::Mp4, VideoContainer::Mp4)
                    | (IsoKind::QuickTime, VideoContainer::Mov) => {}
                    (IsoKind::Other(_), _) => {
                        return Err(Refused::Unparseable(format!(
                            "a .{ext} file must be {expected}; this is {found}"
                        )))
                    }
                    _ => return Err(mismatch(&ext, expected, &found)),
                }
                kind = Some(decided);
            }
        }
        if header.kind == *b"moov" && moov.is_none() {
            moov = Some((payload_at, payload_len));
        }
        offset = header.end;
    }

    let Some((moov_at, moov_len)) = moov else {
        return Err(Refused::Truncated(
            "the video has no moov box (the upload may be incomplete)".to_owned(),
        ));
    };
    if moov_len > MAX_MOOV_BYTES {
        return Err(Refused::Unparseable(format!(
            "the video's moov box is too large ({moov_len} bytes; at most {MAX_MOOV_BYTES} are read)"
        )));
    }
    let len = usize::try_from(moov_len).unwrap_or(usize::MAX);
    let bytes = read_fully(data, moov_at, len).await?;
    if bytes.len() < len {
        return Err(Refused::Truncated(
            "the file is cut short inside its moov box".to_owned(),
        ));
    }
    parse_moov(&bytes, container, total)
}

// ---------------------------------------------------------------------------------------------
// Images

fn cut_short(what: &str) -> Refused {
    Refused::Truncated(format!("the file is cut short inside the {what} header"))
}

fn png_size(head: &[u8]) -> Result<(u32, u32), Refused> {
    // Signature, then the IHDR chunk: length (13), type, width, height, 5 more bytes, CRC.
    if head.len() < 33 {
        return Err(cut_short("PNG"));
    }
    if be32(head, 8) != Some(13) || head.get(12..16) != Some(b"IHDR".as_slice()) {
        return Err(Refused::Unparseable(
            "the PNG image does not start with an IHDR chunk".into(),
        ));
    }
    let width = be32(head, 16).ok_or_else(|| cut_short("PNG"))?;
    let height = be32(head, 20).ok_or_else(|| cut_short("PNG"))?;
    if width > i32::MAX as u32 || height > i32::MAX as u32 {
        return Err(Refused::Unparseable(
            "the PNG image has invalid dimensions".to_owned(),
        ));
    }
    Ok((width, height))
}

fn webp_size(head: &[u8], total: u64) -> Result<(u32, u32), Refused> {
    let declared = le32(head, 4)
        .map(|s| u64::from(s) + 8)
        .ok_or_else(|| cut_short("WebP"))?;
    if declared > total {
        return Err(Refused::Truncated(format!(
            "the file is cut short: its RIFF header declares {declared} bytes but it has {total}"
        )));
    }
    let chunk = fourcc_at(head, 12).ok_or_else(|| cut_short("WebP"))?;
    let short = || cut_short("WebP");
    match &chunk {
        b"VP8 " => {
            // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height.
            let code = head.get(23..26).ok_or_else(short)?;
            if code != [0x9D, 0x01, 0x2A] {
                return Err(Refused::Unparseable(
                    "the WebP image has an invalid VP8 frame".into(),
                ));
            }
            let width = le16(head, 26).ok_or_else(short)? & 0x3FFF;
            let height = le16(head, 28).ok_or_else(short)? & 0x3FFF;
            Ok((u32::from(width), u32::from(height)))
        }
        b"VP8L" => {
            // Signature 0x2F, then width - 1 and height - 1 in 14 bits each.
            if *head.get(20).ok_or_else(short)? != 0x2F {
                return Err(Refused::Unparseable(
                    "the WebP image has an invalid VP8L header".into(),
                ));
            }
            let bits = le32(head, 21).ok_or_else(short)?;
            Ok(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => {
            // Flags (1), reserved (3), canvas width - 1 and height - 1 in 24 bits each.
            let width = le24(head, 24).ok_or_else(short)?;
            let height = le24(head, 27).ok_or_else(short)?;
            Ok((width + 1, height + 1))
        }
        other => Err(Refused::Unparseable(format!(
            "the WebP image starts with an unknown '{}' chunk",
            fourcc_str(other)
        ))),
    }
}

/// Whether a JPEG marker starts a frame (SOF0-SOF15 but DHT, JPG and DAC).
fn is_sof(marker: u8) -> bool {
    matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC)
}

/// Walks JPEG segments from after SOI to the frame header, with range reads.
async fn jpeg_size(reader: &mut Reader<'_>) -> Result<(u32, u32), Refused> {
    let total = reader.total;
    let no_frame =
        || Refused::Truncated("the file is cut short before the JPEG frame header".to_owned());
    let mut pos = 2u64;
    for _ in 0..MAX_JPEG_SEGMENTS {
        let b = reader.get(pos, 2).await?;
        let (Some(&first), Some(&marker)) = (b.first(), b.get(1)) else {
            return Err(no_frame());
        };
        if first != 0xFF {
            return Err(Refused::Unparseable(format!(
                "the JPEG image has no segment marker at byte {pos}"
            )));
        }
        if marker == 0xFF {
            // A fill byte before a marker.
            pos = pos.saturating_add(1);
            continue;
        }
        pos = pos.saturating_add(2);
        match marker {
            0x01 | 0xD0..=0xD8 => continue,
            0xD9 | 0xDA => {
                return Err(Refused::Unparseable(
                    "the JPEG image has no frame header before its image data".to_owned(),
                ))
            }
            0x00 => {
                return Err(Refused::Unparseable(format!(
                    "the JPEG image has an invalid marker at byte {}",
                    pos - 2
                )))
            }
            _ => {}
        }
        let segment_len = be16(reader.get(pos, 2).await?, 0).ok_or_else(no_frame)?;
        if segment_len < 2 {
            return Err(Refused::Unparseable(format!(
                "the JPEG image has an invalid segment length at byte {pos}"
            )));
        }
        if is_sof(marker) {
            // Length, precision (1), height (2), width (2).
            let sof = reader.get(pos.saturating_add(2), 5).await?;
            let height = be16(sof, 1).ok_or_else(no_frame)?;
            let width = be16(sof, 3).ok_or_else(no_frame)?;
            return Ok((u32::from(width), u32::from(height)));
        }
        pos = pos.saturating_add(u64::from(segment_len));
        if pos > total {
            return Err(no_frame());
        }
    }
    Err(Refused::Unparseable(format!(
        "the JPEG image has no frame header in its first {MAX_JPEG_SEGMENTS} segments"
    )))
}

/// Checks uploaded image content against its extension ("jpg"/"jpeg", "png" or "webp") and
/// reads its dimensions, from its first bytes (for a JPEG, its segment headers up to the frame
/// header, however large the EXIF data before it). The dimensions are held to
/// [`MAX_IMAGE_SIDE`] and [`MAX_IMAGE_PIXELS`].
pub async fn inspect_image(extension: &str, data: &dyn RangeRead) -> Result<ImageFacts, Refused> {
    let ext = normalise(extension);
    let (format, expected, magic) = match ext.as_str() {
        "jpg" | "jpeg" => (ImageFormat::Jpeg, "a JPEG image", JPEG_MAGIC),
        "png" => (ImageFormat::Png, "a PNG image", PNG_SIGNATURE),
        "webp" => (ImageFormat::Webp, "a WebP image", b"RIFF".as_slice()),
        _ => {
            return Err(Refused::Unsupported(format!(
                "an image must be a .jpg, .png or .webp file, not {}",
                shown_extension(&ext)
            )))
        }
    };
    let mut reader = Reader::new(data, JPEG_WINDOW);
    let total = reader.total;
    if total == 0 {
        return Err(Refused::Truncated("the file is empty".to_owned()));
    }
    let head = reader.get(0, SNIFF_LEN).await?.to_vec();
    let matches = match format {
        ImageFormat::Webp => {
            head.starts_with(b"RIFF")
                && head
                    .get(8..12)
                    .is_none_or(|form| form == b"WEBP".as_slice())
        }
        _ => head.starts_with(magic),
    };
    if !matches {
        if head.len() < magic.len() && magic.starts_with(&head) {
            return Err(Refused::Truncated(format!(
                "the file is too short to be {expected} ({} bytes)",
                head.len()
            )));
        }
        return Err(match sniff(&head) {
            Some(found) => mismatch(&ext, expected, &found),
            None => Refused::Unparseable(format!(
                "a .{ext} file must be {expected}; this file is not a recognised image"
            )),
        });
    }
    let (width, height) = match format {
        ImageFormat::Png => png_size(&head)?,
        ImageFormat::Webp => webp_size(&head, total)?,
        ImageFormat::Jpeg => jpeg_size(&mut reader).await?,
    };
    if width == 0 || height == 0 {
        return Err(Refused::Unparseable(
            "the image has a zero width or height".to_owned(),
        ));
    }
    check_image_size(width, height)?;
    Ok(ImageFacts {
        format,
        width,
        height,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    // -- A tiny box writer ----------------------------------------------------------------

    fn bx(kind: &[u8; 4], parts: &[&[u8]]) -> Vec<u8> {
        let len = 8 + parts.iter().map(|p| p.len()).sum::<usize>();
        let mut out = u32::try_from(len).unwrap().to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        for part in parts {
            out.extend_from_slice(part);
        }
        out
    }

    fn full(kind: &[u8; 4], version: u8, flags: u32, body: &[u8]) -> Vec<u8> {
        let mut vf = flags.to_be_bytes();
        vf[0] = version;
        bx(kind, &[&vf, body])
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    fn ftyp(major: &[u8; 4], compatible: &[&[u8; 4]]) -> Vec<u8> {
        let mut body = major.to_vec();
        body.extend_from_slice(&0x200u32.to_be_bytes());
        for brand in compatible {
            body.extend_from_slice(*brand);
        }
        bx(b"ftyp", &[&body])
    }

    fn matrix(rotation: u16) -> Vec<u8> {
        let one = 0x0001_0000i32;
        let (a, b, c, d) = match rotation {
            90 => (0, one, -one, 0),
            180 => (-one, 0, 0, -one),
            270 => (0, -one, one, 0),
            _ => (one, 0, 0, one),
        };
        [a, b, 0, c, d, 0, 0, 0, 0x4000_0000]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect()
    }

    fn mvhd_v0(timescale: u32, duration: u32) -> Vec<u8> {
        let body = cat(&[
            &[0; 8],
            &timescale.to_be_bytes(),
            &duration.to_be_bytes(),
            &0x0001_0000u32.to_be_bytes(),
            &[1, 0],
            &[0; 10],
            &matrix(0),
            &[0; 24],
            &3u32.to_be_bytes(),
        ]);
        full(b"mvhd", 0, 0, &body)
    }

    fn mvhd_v1(timescale: u32, duration: u64) -> Vec<u8> {
        let body = cat(&[
            &[0; 16],
            &timescale.to_be_bytes(),
            &duration.to_be_bytes(),
            &[0; 16],
            &matrix(0),
            &[0; 28],
        ]);
        full(b"mvhd", 1, 0, &body)
    }

    fn tkhd(version: u8, rotation: u16, width: u32, height: u32) -> Vec<u8> {
        let times: &[u8] = if version == 1 { &[0; 32] } else { &[0; 20] };
        let body = cat(&[
            times,
            &[0; 16],
            &matrix(rotation),
            &(width << 16).to_be_bytes(),
            &(height << 16).to_be_bytes(),
        ]);
        full(b"tkhd", version, 3, &body)
    }

    fn mdhd(timescale: u32, duration: u32) -> Vec<u8> {
        let body = cat(&[
            &[0; 8],
            &timescale.to_be_bytes(),
            &duration.to_be_bytes(),
            &[0x55, 0xC4, 0, 0],
        ]);
        full(b"mdhd", 0, 0, &body)
    }

    fn hdlr(handler: &[u8; 4]) -> Vec<u8> {
        full(b"hdlr", 0, 0, &cat(&[b"mhlr", handler, &[0; 12], b"\0"]))
    }

    fn stsd(entry: &[u8]) -> Vec<u8> {
        full(b"stsd", 0, 0, &cat(&[&1u32.to_be_bytes(), entry]))
    }

    fn visual_entry(codec: &[u8; 4], width: u16, height: u16) -> Vec<u8> {
        let body = cat(&[
            &[0; 6],
            &1u16.to_be_bytes(),
            &[0; 16],
            &width.to_be_bytes(),
            &height.to_be_bytes(),
            &[0; 50],
        ]);
        bx(codec, &[&body])
    }

    /// A `stsz` box of `count` samples of `size` bytes each (no table).
    fn stsz(size: u32, count: u32) -> Vec<u8> {
        full(
            b"stsz",
            0,
            0,
            &cat(&[&size.to_be_bytes(), &count.to_be_bytes()]),
        )
    }

    /// A `stz2` box of `count` samples with 8-bit sizes, all 1.
    fn stz2(count: u32) -> Vec<u8> {
        let table = vec![1u8; usize::try_from(count).unwrap()];
        full(
            b"stz2",
            0,
            0,
            &cat(&[&[0, 0, 0, 8], &count.to_be_bytes(), &table]),
        )
    }

    /// An MP4 with one avc1 video track of `width`×`height` (tkhd and sample entry), lasting
    /// `duration_ms`, whose sample table is `sizes`, and an mdat of `payload` bytes.
    fn mp4_with(
        width: u16,
        height: u16,
        duration_ms: u32,
        sizes: &[u8],
        payload: usize,
    ) -> Vec<u8> {
        let track = trak_with(
            &tkhd(0, 0, u32::from(width), u32::from(height)),
            &mdhd(1000, duration_ms),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"avc1", width, height)),
            sizes,
        );
        cat(&[
            &ftyp(b"isom", &[b"isom"]),
            &bx(b"mdat", &[&vec![0x42; payload]]),
            &bx(b"moov", &[&mvhd_v0(1000, duration_ms), &track]),
        ])
    }

    fn audio_entry(codec: &[u8; 4]) -> Vec<u8> {
        bx(codec, &[&[0; 28]])
    }

    fn trak(tkhd: &[u8], mdhd: &[u8], hdlr: &[u8], stsd: &[u8]) -> Vec<u8> {
        trak_with(tkhd, mdhd, hdlr, stsd, &[])
    }

    /// [`trak`] with `sizes` (a `stsz` or `stz2` box, or nothing) after the `stts` box.
    fn trak_with(tkhd: &[u8], mdhd: &[u8], hdlr: &[u8], stsd: &[u8], sizes: &[u8]) -> Vec<u8> {
        let stbl = bx(b"stbl", &[stsd, &full(b"stts", 0, 0, &[0; 4]), sizes]);
        let minf = bx(b"minf", &[&full(b"vmhd", 0, 1, &[0; 8]), &stbl]);
        let mdia = bx(b"mdia", &[mdhd, hdlr, &minf]);
        bx(b"trak", &[tkhd, &bx(b"edts", &[&[0; 12]]), &mdia])
    }

    /// moov: mvhd (1000/12345), a 90° 1080x1920 avc1 track of 370 samples over 12.345 s
    /// (29.972 fps), an mp4a track, and a QuickTime style udta/meta that is simply skipped.
    fn moov_mp4() -> Vec<u8> {
        let video = trak_with(
            &tkhd(0, 90, 1080, 1920),
            &mdhd(90000, 1_111_050),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"avc1", 1080, 1920)),
            &stsz(2, 370),
        );
        let audio = trak(
            &tkhd(0, 0, 0, 0),
            &mdhd(48000, 592_560),
            &hdlr(b"soun"),
            &stsd(&audio_entry(b"mp4a")),
        );
        let udta = bx(b"udta", &[&bx(b"meta", &[&[0xAB; 20]]), &[0, 0, 0, 0]]);
        bx(b"moov", &[&mvhd_v0(1000, 12345), &video, &audio, &udta])
    }

    fn mp4_file() -> Vec<u8> {
        cat(&[
            &ftyp(b"isom", &[b"isom", b"iso2", b"avc1", b"mp41"]),
            &bx(b"free", &[]),
            &bx(b"mdat", &[&[0x42; 1000]]),
            &moov_mp4(),
        ])
    }

    /// ftyp qt, wide, a largesize mdat, then moov: mvhd v1 with no duration, a 180° apcn track
    /// whose tkhd has no size, and a timecode track.
    fn mov_file() -> Vec<u8> {
        let mut mdat = 1u32.to_be_bytes().to_vec();
        mdat.extend_from_slice(b"mdat");
        mdat.extend_from_slice(&(16u64 + 300).to_be_bytes());
        mdat.extend_from_slice(&[7; 300]);
        let video = trak(
            &tkhd(1, 180, 0, 0),
            &mdhd(600, 6000),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"apcn", 1280, 720)),
        );
        let timecode = trak(
            &tkhd(0, 0, 0, 0),
            &mdhd(600, 600),
            &hdlr(b"tmcd"),
            &stsd(&bx(b"tmcd", &[&[0; 20]])),
        );
        let moov = bx(b"moov", &[&mvhd_v1(600, 0), &video, &timecode]);
        cat(&[&ftyp(b"qt  ", &[b"qt  "]), &bx(b"wide", &[]), &mdat, &moov])
    }

    fn png_file(width: u32, height: u32) -> Vec<u8> {
        let ihdr = cat(&[
            &width.to_be_bytes(),
            &height.to_be_bytes(),
            &[8, 6, 0, 0, 0],
        ]);
        cat(&[
            PNG_SIGNATURE,
            &13u32.to_be_bytes(),
            b"IHDR",
            &ihdr,
            &[0xDE, 0xAD, 0xBE, 0xEF],
            &0u32.to_be_bytes(),
            b"IEND",
            &[0xAE, 0x42, 0x60, 0x82],
        ])
    }

    fn segment(marker: u8, payload: &[u8]) -> Vec<u8> {
        let len = u16::try_from(payload.len() + 2).unwrap();
        cat(&[&[0xFF, marker], &len.to_be_bytes(), payload])
    }

    /// SOI, APP0, two large APP1 segments (over 120 KiB of EXIF/XMP), DQT, fill bytes, SOF.
    fn jpeg_file(sof: u8, width: u16, height: u16) -> Vec<u8> {
        cat(&[
            &[0xFF, 0xD8],
            &segment(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"),
            &segment(0xE1, &cat(&[b"Exif\0\0", &[0x11; 65000]])),
            &segment(0xE1, &[0x22; 60000]),
            &segment(0xDB, &[0; 65]),
            &[0xFF, 0xFF],
            &segment(
                sof,
                &cat(&[
                    &[8],
                    &height.to_be_bytes(),
                    &width.to_be_bytes(),
                    &[3, 1, 0x22, 0],
                ]),
            ),
            &segment(0xDA, &[0; 10]),
            &[0x12; 100],
            &[0xFF, 0xD9],
        ])
    }

    fn webp_file(chunk: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let body = cat(&[
            b"WEBP",
            chunk,
            &u32::try_from(payload.len()).unwrap().to_le_bytes(),
            payload,
        ]);
        cat(&[
            b"RIFF",
            &u32::try_from(body.len()).unwrap().to_le_bytes(),
            &body,
        ])
    }

    /// A store that claims a large length, serves given pieces (zeros elsewhere) and counts
    /// the bytes it hands out.
    struct Sparse {
        len: u64,
        pieces: Vec<(u64, Vec<u8>)>,
        served: AtomicU64,
    }

    #[async_trait::async_trait]
    impl RangeRead for Sparse {
        fn len(&self) -> u64 {
            self.len
        }

        async fn read_at(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
            let end = offset.saturating_add(len as u64).min(self.len);
            let mut out = vec![0u8; usize::try_from(end.saturating_sub(offset)).unwrap()];
            for (at, bytes) in &self.pieces {
                for (i, byte) in bytes.iter().enumerate() {
                    let p = at + i as u64;
                    if p >= offset && p < end {
                        out[usize::try_from(p - offset).unwrap()] = *byte;
                    }
                }
            }
            self.served.fetch_add(out.len() as u64, Ordering::Relaxed);
            Ok(out)
        }
    }

    struct Failing;

    #[async_trait::async_trait]
    impl RangeRead for Failing {
        fn len(&self) -> u64 {
            100
        }

        async fn read_at(&self, _: u64, _: usize) -> std::io::Result<Vec<u8>> {
            Err(std::io::Error::other("blob store unavailable"))
        }
    }

    async fn video(ext: &str, bytes: Vec<u8>) -> Result<VideoFacts, Refused> {
        inspect_video(ext, &bytes).await
    }

    async fn image(ext: &str, bytes: Vec<u8>) -> Result<ImageFacts, Refused> {
        inspect_image(ext, &bytes).await
    }

    fn assert_send<T: Send>(_: &T) {}

    // -- Video ----------------------------------------------------------------------------

    #[tokio::test]
    async fn mp4_with_moov_after_mdat() {
        let facts = video("mp4", mp4_file()).await.unwrap();
        assert_eq!(
            facts,
            VideoFacts {
                container: VideoContainer::Mp4,
                duration_ms: 12345,
                width: 1920,
                height: 1080,
                rotation: 90,
                video_codec: "avc1".into(),
                audio_codec: Some("mp4a".into()),
                frame_rate_millis: 29_972,
            }
        );
        assert_eq!(facts.frame_rate(), Some(29.972));
        let json = serde_json::to_value(&facts).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"container": "mp4", "durationMs": 12345, "width": 1920,
                "height": 1080, "rotation": 90, "videoCodec": "avc1", "audioCodec": "mp4a",
                "frameRate": 29.972})
        );
        assert_eq!(serde_json::from_value::<VideoFacts>(json).unwrap(), facts);
        let data = mp4_file();
        let future = inspect_video("mp4", &data);
        assert_send(&future);
        assert_eq!(future.await.unwrap().rotation, 90);
        // The caller may pass the extension as found in the name.
        assert!(video(".MP4", mp4_file()).await.is_ok());
    }

    #[tokio::test]
    async fn mov_with_wide_largesize_mdat_and_fallbacks() {
        let facts = video("mov", mov_file()).await.unwrap();
        assert_eq!(
            facts,
            VideoFacts {
                container: VideoContainer::Mov,
                duration_ms: 10000,
                width: 1280,
                height: 720,
                rotation: 180,
                video_codec: "apcn".into(),
                audio_codec: None,
                frame_rate_millis: 0,
            }
        );
        // No sample size box: the frame rate is unknown, and shown as null.
        assert_eq!(facts.frame_rate(), None);
        assert_eq!(
            serde_json::to_value(&facts).unwrap()["frameRate"],
            serde_json::Value::Null
        );
        assert_eq!(serde_json::to_value(&facts).unwrap()["container"], "mov");
    }

    #[tokio::test]
    async fn rotation_270_and_mp42_major_brand() {
        let track = trak(
            &tkhd(0, 270, 640, 480),
            &mdhd(1000, 1000),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"hvc1", 640, 480)),
        );
        let file = cat(&[
            &ftyp(b"mp42", &[b"mp42", b"isom"]),
            &bx(b"moov", &[&mvhd_v0(1000, 2500), &track]),
        ]);
        let facts = video("mp4", file).await.unwrap();
        assert_eq!((facts.width, facts.height, facts.rotation), (480, 640, 270));
        assert_eq!(
            (facts.video_codec.as_str(), facts.duration_ms),
            ("hvc1", 2500)
        );
    }

    #[tokio::test]
    async fn classic_quicktime_without_ftyp() {
        let moov = bx(
            b"moov",
            &[
                &mvhd_v0(600, 1200),
                &trak(
                    &tkhd(0, 0, 320, 240),
                    &mdhd(600, 1200),
                    &hdlr(b"vide"),
                    &stsd(&visual_entry(b"mp4v", 320, 240)),
                ),
            ],
        );
        let file = cat(&[&bx(b"wide", &[]), &bx(b"mdat", &[&[1; 50]]), &moov]);
        let facts = video("mov", file.clone()).await.unwrap();
        assert_eq!(
            (facts.width, facts.height, facts.duration_ms),
            (320, 240, 2000)
        );
        let refused = video("mp4", file).await.unwrap_err();
        assert!(
            matches!(&refused, Refused::Mismatch(m) if m.contains(".mp4") && m.contains("QuickTime")),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn huge_file_reads_only_headers_and_moov() {
        // ftyp, a 5 GiB mdat with a 64-bit size, then moov at the end.
        let ftyp = ftyp(b"isom", &[b"isom"]);
        let mdat_size = 5u64 << 30;
        let mdat = cat(&[&1u32.to_be_bytes(), b"mdat", &mdat_size.to_be_bytes()]);
        let moov = moov_mp4();
        let moov_at = ftyp.len() as u64 + mdat_size;
        let data = Sparse {
            len: moov_at + moov.len() as u64,
            pieces: vec![(0, cat(&[&ftyp, &mdat])), (moov_at, moov.clone())],
            served: AtomicU64::new(0),
        };
        let facts = inspect_video("mp4", &data).await.unwrap();
        assert_eq!((facts.width, facts.height), (1920, 1080));
        let served = data.served.load(Ordering::Relaxed);
        assert!(
            served < 3 * BOX_WINDOW as u64 + moov.len() as u64,
            "served {served} bytes"
        );
    }

    #[tokio::test]
    async fn container_mismatches_name_both_sides() {
        let refused = video("mov", mp4_file()).await.unwrap_err();
        assert_eq!(
            refused,
            Refused::Mismatch(
                "a .mov file must be a QuickTime (MOV) video; this is an MP4 video".into()
            )
        );
        let refused = video("mp4", mov_file()).await.unwrap_err();
        assert_eq!(
            refused,
            Refused::Mismatch(
                "a .mp4 file must be an MP4 video; this is a QuickTime (MOV) video".into()
            )
        );
        let m4a = cat(&[&ftyp(b"M4A ", &[b"M4A ", b"isom"]), &moov_mp4()]);
        assert!(matches!(video("mp4", m4a).await, Err(Refused::Mismatch(m)) if m.contains("M4A")));
        let heic = cat(&[&ftyp(b"heic", &[b"mif1", b"heic"]), &bx(b"meta", &[])]);
        assert!(
            matches!(video("mov", heic).await, Err(Refused::Mismatch(m)) if m.contains("HEIF"))
        );
        let refused = video("mp4", png_file(10, 10)).await.unwrap_err();
        assert_eq!(
            refused,
            Refused::Mismatch("a .mp4 file must be an MP4 video; this is a PNG image".into())
        );
        let refused = video("mov", b"hello, this is not a movie\n".to_vec())
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, Refused::Mismatch(m) if m.ends_with("plain text")),
            "{refused}"
        );
        for (bytes, name) in [
            (jpeg_file(0xC0, 1, 1), "JPEG"),
            (webp_file(b"VP8X", &[0; 10]), "WebP"),
            (b"GIF89a\x01\0\x01\0".to_vec(), "GIF"),
            (b"%PDF-1.7\n".to_vec(), "PDF"),
            (b"PK\x03\x04\x14\0\0\0".to_vec(), "ZIP"),
        ] {
            let refused = video("mp4", bytes).await.unwrap_err();
            assert!(
                matches!(&refused, Refused::Mismatch(m) if m.contains(name)),
                "{refused}"
            );
        }
    }

    #[tokio::test]
    async fn truncated_videos() {
        let file = mp4_file();
        // Cut in the middle of moov.
        let cut = file[..file.len() - 40].to_vec();
        assert!(
            matches!(video("mp4", cut).await, Err(Refused::Truncated(m)) if m.contains("'moov'"))
        );
        // An mdat declaring more than there is.
        let mdat = cat(&[&1_000_000u32.to_be_bytes(), b"mdat", &[0; 100]]);
        let file = cat(&[&ftyp(b"isom", &[b"isom"]), &mdat]);
        let refused = video("mp4", file).await.unwrap_err();
        assert!(
            matches!(&refused, Refused::Truncated(m) if m.contains("'mdat'") && m.contains("1000000")),
            "{refused}"
        );
        // No moov at all.
        let file = cat(&[&ftyp(b"isom", &[b"isom"]), &bx(b"mdat", &[&[0; 10]])]);
        assert!(
            matches!(video("mp4", file).await, Err(Refused::Truncated(m)) if m.contains("no moov"))
        );
        // A few stray bytes after the last box.
        let file = cat(&[&mp4_file(), &[0, 0, 1]]);
        assert!(matches!(
            video("mp4", file).await,
            Err(Refused::Truncated(_))
        ));
        assert!(matches!(
            video("mp4", Vec::new()).await,
            Err(Refused::Truncated(_))
        ));
        assert!(matches!(
            video("mp4", vec![0, 0]).await,
            Err(Refused::Truncated(_))
        ));
    }

    #[tokio::test]
    async fn unparseable_and_unsupported_videos() {
        let garbage: Vec<u8> = (0..2000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80)
            .collect();
        assert!(matches!(
            video("mp4", garbage).await,
            Err(Refused::Unparseable(_))
        ));
        // Audio only.
        let audio = trak(
            &tkhd(0, 0, 0, 0),
            &mdhd(48000, 48000),
            &hdlr(b"soun"),
            &stsd(&audio_entry(b"mp4a")),
        );
        let file = cat(&[
            &ftyp(b"isom", &[b"isom"]),
            &bx(b"moov", &[&mvhd_v0(1000, 1000), &audio]),
        ]);
        assert_eq!(
            video("mp4", file).await,
            Err(Refused::Unparseable("the video has no video track".into()))
        );
        // A zero timescale.
        let file = cat(&[&ftyp(b"isom", &[]), &bx(b"moov", &[&mvhd_v0(0, 1000)])]);
        assert!(
            matches!(video("mp4", file).await, Err(Refused::Unparseable(m)) if m.contains("timescale"))
        );
        // Zero dimensions everywhere.
        let track = trak(
            &tkhd(0, 0, 0, 0),
            &mdhd(1, 1),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"avc1", 0, 0)),
        );
        let file = cat(&[
            &ftyp(b"isom", &[]),
            &bx(b"moov", &[&mvhd_v0(1000, 1000), &track]),
        ]);
        assert!(
            matches!(video("mp4", file).await, Err(Refused::Unparseable(m)) if m.contains("zero"))
        );
        // A child box overrunning its parent.
        let mut moov = bx(b"moov", &[&mvhd_v0(1000, 1000)]);
        moov[8..12].copy_from_slice(&500u32.to_be_bytes());
        let file = cat(&[&ftyp(b"isom", &[]), &moov]);
        assert!(matches!(
            video("mp4", file).await,
            Err(Refused::Unparseable(_))
        ));
        // An unknown brand.
        let file = cat(&[&ftyp(b"crx ", &[b"crx "]), &moov_mp4()]);
        assert!(
            matches!(video("mp4", file).await, Err(Refused::Unparseable(m)) if m.contains("crx"))
        );

        let refused = video("avi", mp4_file()).await.unwrap_err();
        assert_eq!(
            refused,
            Refused::Unsupported("a video must be an .mp4 or .mov file, not .avi".into())
        );
        assert!(matches!(
            video("", mp4_file()).await,
            Err(Refused::Unsupported(_))
        ));
        let refused = inspect_video("mp4", &Failing).await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            "the stored upload could not be read: blob store unavailable"
        );
    }

    #[tokio::test]
    async fn no_panic_on_any_prefix_or_corruption() {
        for file in [mp4_file(), mov_file()] {
            for cut in 0..file.len() {
                let _ = video("mp4", file[..cut].to_vec()).await;
                let _ = video("mov", file[..cut].to_vec()).await;
            }
            for i in 0..file.len() {
                for value in [0x00, 0x01, 0x7F, 0xFF] {
                    let mut corrupt = file.clone();
                    corrupt[i] = value;
                    let _ = video("mp4", corrupt.clone()).await;
                    let _ = video("mov", corrupt).await;
                }
            }
        }
        for file in [
            png_file(3, 4),
            webp_file(b"VP8X", &[0; 10]),
            jpeg_file(0xC0, 5, 6)[..400].to_vec(),
        ] {
            for cut in 0..file.len() {
                for ext in ["png", "webp", "jpg"] {
                    let _ = image(ext, file[..cut].to_vec()).await;
                    let mut corrupt = file.clone();
                    corrupt[cut] = 0xFF;
                    let _ = image(ext, corrupt).await;
                }
            }
        }
    }

    // -- Images ---------------------------------------------------------------------------

    #[tokio::test]
    async fn png_images() {
        let facts = image("png", png_file(640, 480)).await.unwrap();
        assert_eq!(
            facts,
            ImageFacts {
                format: ImageFormat::Png,
                width: 640,
                height: 480
            }
        );
        assert_eq!(
            serde_json::to_value(&facts).unwrap(),
            serde_json::json!({"format": "png", "width": 640, "height": 480})
        );
        assert!(matches!(
            image("png", png_file(640, 480)[..20].to_vec()).await,
            Err(Refused::Truncated(_))
        ));
        assert!(matches!(
            image("png", PNG_SIGNATURE[..5].to_vec()).await,
            Err(Refused::Truncated(_))
        ));
        assert!(matches!(
            image("png", png_file(0, 480)).await,
            Err(Refused::Unparseable(_))
        ));
    }

    #[tokio::test]
    async fn jpeg_with_large_exif_before_the_frame() {
        let facts = image("jpg", jpeg_file(0xC0, 400, 300)).await.unwrap();
        assert_eq!(
            facts,
            ImageFacts {
                format: ImageFormat::Jpeg,
                width: 400,
                height: 300
            }
        );
        let facts = image("JPEG", jpeg_file(0xC2, 4000, 3000)).await.unwrap();
        assert_eq!((facts.width, facts.height), (4000, 3000));
        // Cut inside the second APP1 segment, before the frame header.
        let cut = jpeg_file(0xC0, 400, 300)[..100_000].to_vec();
        assert!(matches!(
            image("jpg", cut).await,
            Err(Refused::Truncated(_))
        ));
        // Scan data before any frame header.
        let no_sof = cat(&[
            &[0xFF, 0xD8],
            &segment(0xDB, &[0; 65]),
            &segment(0xDA, &[0; 10]),
        ]);
        assert!(matches!(
            image("jpg", no_sof).await,
            Err(Refused::Unparseable(_))
        ));
        assert!(matches!(
            image("jpg", jpeg_file(0xC0, 400, 0)).await,
            Err(Refused::Unparseable(_))
        ));
        assert!(matches!(
            image("jpg", vec![0xFF, 0xD8]).await,
            Err(Refused::Truncated(_))
        ));
    }

    #[tokio::test]
    async fn webp_variants() {
        // VP8: frame tag, start code, 14-bit width/height (with scale bits set to check masking).
        let vp8 = cat(&[
            &[0x50, 0x2A, 0x00, 0x9D, 0x01, 0x2A],
            &(0xC000u16 | 800).to_le_bytes(),
            &600u16.to_le_bytes(),
            &[0; 20],
        ]);
        let facts = image("webp", webp_file(b"VP8 ", &vp8)).await.unwrap();
        assert_eq!(
            facts,
            ImageFacts {
                format: ImageFormat::Webp,
                width: 800,
                height: 600
            }
        );
        // VP8L: signature, then width - 1 and height - 1 in 14 bits each.
        let bits: u32 = 399 | (299 << 14);
        let vp8l = cat(&[&[0x2F], &bits.to_le_bytes(), &[0; 10]]);
        let facts = image("webp", webp_file(b"VP8L", &vp8l)).await.unwrap();
        assert_eq!((facts.width, facts.height), (400, 300));
        // VP8X: flags, reserved, 24-bit width - 1 and height - 1.
        let vp8x = cat(&[&[0x10, 0, 0, 0], &[0x9F, 0x0F, 0x00], &[0xB7, 0x0B, 0x00]]);
        let facts = image("webp", webp_file(b"VP8X", &vp8x)).await.unwrap();
        assert_eq!((facts.width, facts.height), (4000, 3000));
        // A canvas of 10,000,000 x 16,912 is read, and refused.
        let vp8x = cat(&[&[0x10, 0, 0, 0], &[0x7F, 0x96, 0x98], &[0x0F, 0x42, 0x00]]);
        assert_eq!(
            image("webp", webp_file(b"VP8X", &vp8x)).await,
            Err(Refused::OverLimit(
                "the image declares 10000000×16912 pixels; at most 30,000 pixels a side and \
                 178,956,970 pixels in all are accepted"
                    .into()
            ))
        );
        // A RIFF size beyond the end of the file.
        let mut cut = webp_file(b"VP8L", &vp8l);
        cut.truncate(cut.len() - 3);
        assert!(
            matches!(image("webp", cut).await, Err(Refused::Truncated(m)) if m.contains("RIFF"))
        );
        assert!(matches!(
            image("webp", webp_file(b"VP8 ", &[0; 4])).await,
            Err(Refused::Truncated(_))
        ));
        assert!(matches!(
            image("webp", webp_file(b"ALPH", &[0; 20])).await,
            Err(Refused::Unparseable(_))
        ));
    }

    #[tokio::test]
    async fn image_mismatches_and_unsupported() {
        assert_eq!(
            image("png", jpeg_file(0xC0, 1, 1)).await,
            Err(Refused::Mismatch(
                "a .png file must be a PNG image; this is a JPEG image".into()
            ))
        );
        assert_eq!(
            image("jpg", png_file(1, 1)).await,
            Err(Refused::Mismatch(
                "a .jpg file must be a JPEG image; this is a PNG image".into()
            ))
        );
        assert!(
            matches!(image("webp", png_file(1, 1)).await, Err(Refused::Mismatch(m)) if m.contains("PNG"))
        );
        assert!(
            matches!(image("png", b"GIF89a\x01\0\x01\0\0\0".to_vec()).await, Err(Refused::Mismatch(m)) if m.contains("GIF"))
        );
        let avi = cat(&[b"RIFF", &100u32.to_le_bytes(), b"AVI LIST"]);
        assert!(matches!(image("webp", avi).await, Err(Refused::Mismatch(m)) if m.contains("AVI")));
        assert!(
            matches!(image("jpeg", mp4_file()).await, Err(Refused::Mismatch(m)) if m.contains("MP4 video"))
        );
        assert!(
            matches!(image("png", "<svg>…</svg>".as_bytes().to_vec()).await, Err(Refused::Mismatch(m)) if m.contains("plain text"))
        );
        assert!(matches!(
            image("png", vec![0x00, 0x9F, 0x80, 0x01, 0x02]).await,
            Err(Refused::Unparseable(_))
        ));
        assert_eq!(
            image("gif", png_file(1, 1)).await,
            Err(Refused::Unsupported(
                "an image must be a .jpg, .png or .webp file, not .gif".into()
            ))
        );
        assert!(matches!(
            image("png", Vec::new()).await,
            Err(Refused::Truncated(_))
        ));
    }

    // -- Sane limits ----------------------------------------------------------------------

    fn over_limit(message: &str) -> Result<ImageFacts, Refused> {
        Err(Refused::OverLimit(message.into()))
    }

    #[tokio::test]
    async fn image_bombs_are_refused_naming_the_limit() {
        assert_eq!(
            image("png", png_file(100_000, 100_000)).await,
            over_limit(
                "the image declares 100000×100000 pixels; at most 30,000 pixels a side and \
                 178,956,970 pixels in all are accepted"
            )
        );
        assert_eq!(
            image("jpg", jpeg_file(0xC0, 65535, 65535)).await,
            over_limit(
                "the image declares 65535×65535 pixels; at most 30,000 pixels a side and \
                 178,956,970 pixels in all are accepted"
            )
        );
        // WebP's own maxima: 16,384 a side (VP8L, VP8X) is 268 megapixels.
        let bits: u32 = 16_383 | (16_383 << 14);
        let vp8l = cat(&[&[0x2F], &bits.to_le_bytes(), &[0; 10]]);
        let refused = image("webp", webp_file(b"VP8L", &vp8l)).await.unwrap_err();
        assert!(
            matches!(&refused, Refused::OverLimit(m) if m.starts_with("the image declares 16384×16384 pixels")),
            "{refused}"
        );
        let vp8x = cat(&[&[0x10, 0, 0, 0], &[0xFF, 0x3F, 0x00], &[0xFF, 0x3F, 0x00]]);
        assert!(matches!(
            image("webp", webp_file(b"VP8X", &vp8x)).await,
            Err(Refused::OverLimit(_))
        ));
        // One side too long, few pixels; few sides too long, too many pixels.
        assert!(matches!(
            image("png", png_file(30_001, 10)).await,
            Err(Refused::OverLimit(_))
        ));
        assert!(matches!(
            image("png", png_file(20_000, 9_000)).await,
            Err(Refused::OverLimit(_))
        ));
        // The refusal is a 400 on the file, like any other content refusal.
        let message = image("png", png_file(100_000, 100_000))
            .await
            .unwrap_err()
            .to_string();
        assert!(message.contains("178,956,970"), "{message}");
    }

    #[tokio::test]
    async fn ordinary_photos_and_panoramas_pass_the_limits() {
        for (w, h) in [
            (8000, 6000),
            (12_000, 9_000),
            (30_000, 5_000),
            (5_000, 30_000),
        ] {
            let facts = image("png", png_file(w, h)).await.unwrap();
            assert_eq!((facts.width, facts.height), (w, h));
        }
        let facts = image("jpg", jpeg_file(0xC0, 12_000, 9_000)).await.unwrap();
        assert_eq!((facts.width, facts.height), (12_000, 9_000));
        // Exactly at the limits.
        assert!(image("png", png_file(30_000, 10)).await.is_ok());
        let at_limit = u32::try_from(MAX_IMAGE_PIXELS / 10_000).unwrap();
        assert!(image("png", png_file(10_000, at_limit)).await.is_ok());
        assert!(matches!(
            image("png", png_file(10_000, at_limit + 1)).await,
            Err(Refused::OverLimit(_))
        ));
    }

    #[tokio::test]
    async fn a_sample_bomb_is_refused_naming_the_limit() {
        let file = mp4_with(1920, 1080, 10_000, &stsz(1, u32::MAX), 1000);
        assert_eq!(
            video("mp4", file).await,
            Err(Refused::OverLimit(
                "the video track declares 4,294,967,295 samples; at most 43,200,000 are \
                 accepted (12 hours at 1,000 frames per second)"
                    .into()
            ))
        );
        // Also in a stz2 box (its table is not needed to read the count), and with no duration.
        let count = u32::try_from(MAX_VIDEO_SAMPLES + 1).unwrap();
        let sizes = full(b"stz2", 0, 0, &cat(&[&[0, 0, 0, 8], &count.to_be_bytes()]));
        let file = mp4_with(1920, 1080, 0, &sizes, 1000);
        assert!(
            matches!(video("mp4", file).await, Err(Refused::OverLimit(m)) if m.contains("43,200,000"))
        );
    }

    #[tokio::test]
    async fn more_samples_than_bytes_is_refused() {
        // One hour at 277 fps is under the frame rate limit, but not in a file this small.
        let file = mp4_with(1920, 1080, 3_600_000, &stsz(1, 1_000_000), 1000);
        let len = file.len();
        assert_eq!(
            video("mp4", file).await,
            Err(Refused::OverLimit(format!(
                "the video track declares 1,000,000 samples but the file has {} bytes; each \
                 sample takes at least one byte",
                group_digits(len as u64)
            )))
        );
    }

    #[tokio::test]
    async fn an_absurd_frame_rate_is_refused() {
        let file = mp4_with(1920, 1080, 2000, &stsz(1, 5000), 10_000);
        assert_eq!(
            video("mp4", file).await,
            Err(Refused::OverLimit(
                "the video track declares 5,000 samples over 2 s (2,500 frames per second); at \
                 most 1,000 frames per second are accepted"
                    .into()
            ))
        );
        // A bomb in a second, disabled video track counts too.
        let bomb = trak_with(
            &tkhd(0, 0, 640, 360),
            &mdhd(1000, 1000),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"avc1", 640, 360)),
            &stsz(1, 100_000),
        );
        let mut moov = moov_mp4();
        moov.extend_from_slice(&bomb);
        let size = u32::try_from(moov.len()).unwrap();
        moov[..4].copy_from_slice(&size.to_be_bytes());
        let file = cat(&[
            &ftyp(b"isom", &[b"isom"]),
            &bx(b"mdat", &[&[0; 200_000]]),
            &moov,
        ]);
        assert!(
            matches!(video("mp4", file).await, Err(Refused::OverLimit(m)) if m.contains("100,000 samples over 1 s"))
        );
    }

    #[tokio::test]
    async fn frame_rates_are_read_from_the_sample_count() {
        // Slow motion at 240 fps passes the sane limit.
        let file = mp4_with(1920, 1080, 10_000, &stsz(1, 2400), 3000);
        let facts = video("mp4", file).await.unwrap();
        assert_eq!(facts.frame_rate_millis, 240_000);
        assert_eq!(
            serde_json::to_value(&facts).unwrap()["frameRate"],
            serde_json::json!(240.0)
        );
        // NTSC: 300 frames of 1001 ticks at 30000.
        let track = trak_with(
            &tkhd(0, 0, 1280, 720),
            &mdhd(30_000, 300 * 1001),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"avc1", 1280, 720)),
            &stsz(0, 0),
        );
        let mut sizes = stsz(0, 300);
        sizes.extend_from_slice(&[0; 1200]);
        let size = u32::try_from(sizes.len()).unwrap();
        sizes[..4].copy_from_slice(&size.to_be_bytes());
        let track_300 = trak_with(
            &tkhd(0, 0, 1280, 720),
            &mdhd(30_000, 300 * 1001),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"avc1", 1280, 720)),
            &sizes,
        );
        for (track, rate) in [(track, 0), (track_300, 29_970)] {
            let file = cat(&[
                &ftyp(b"isom", &[b"isom"]),
                &bx(b"mdat", &[&[0; 2000]]),
                &bx(b"moov", &[&mvhd_v0(1000, 10_010), &track]),
            ]);
            assert_eq!(video("mp4", file).await.unwrap().frame_rate_millis, rate);
        }
        // stz2: 60 samples over 2 s.
        let file = mp4_with(1920, 1080, 2000, &stz2(60), 100);
        assert_eq!(video("mp4", file).await.unwrap().frame_rate_millis, 30_000);
        // No duration: the count is held to the limits, but there is no rate.
        let file = mp4_with(1920, 1080, 0, &stsz(1, 60), 100);
        assert_eq!(video("mp4", file).await.unwrap().frame_rate(), None);
    }

    #[tokio::test]
    async fn oversized_videos_are_refused_and_8k_passes() {
        let refused = video("mp4", mp4_with(20_000, 20_000, 1000, &[], 100)).await;
        assert_eq!(
            refused,
            Err(Refused::OverLimit(
                "the video declares 20000×20000 pixels; at most 16,384 pixels a side and \
                 35,651,584 pixels a frame are accepted"
                    .into()
            ))
        );
        // Within a side but over the pixels of a frame.
        assert!(matches!(
            video("mp4", mp4_with(16_384, 4_000, 1000, &[], 100)).await,
            Err(Refused::OverLimit(_))
        ));
        // A modest display size over a huge coded one.
        let track = trak(
            &tkhd(0, 0, 1920, 1080),
            &mdhd(1000, 1000),
            &hdlr(b"vide"),
            &stsd(&visual_entry(b"avc1", 65535, 65535)),
        );
        let file = cat(&[
            &ftyp(b"isom", &[b"isom"]),
            &bx(b"moov", &[&mvhd_v0(1000, 1000), &track]),
        ]);
        assert_eq!(
            video("mp4", file).await,
            Err(Refused::OverLimit(
                "the video's sample description declares 65535×65535 pixels; at most 16,384 \
                 pixels a side and 35,651,584 pixels a frame are accepted"
                    .into()
            ))
        );
        for (w, h) in [(7680, 4320), (8192, 4320), (4320, 7680), (3840, 2160)] {
            let facts = video("mp4", mp4_with(w, h, 1000, &stsz(1, 30), 100))
                .await
                .unwrap();
            assert_eq!((facts.width, facts.height), (u32::from(w), u32::from(h)));
        }
    }

    #[test]
    fn frame_rates_in_json() {
        let stored = serde_json::json!({"container": "mp4", "durationMs": 1000, "width": 2,
            "height": 2, "rotation": 0, "videoCodec": "avc1", "audioCodec": null});
        // Stored before frame rates were read.
        let facts: VideoFacts = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(facts.frame_rate_millis, 0);
        let mut with = stored;
        with["frameRate"] = serde_json::Value::Null;
        assert_eq!(
            serde_json::from_value::<VideoFacts>(with.clone())
                .unwrap()
                .frame_rate_millis,
            0
        );
        for (shown, millis) in [
            (serde_json::json!(29.97), 29_970),
            (serde_json::json!(30), 30_000),
            (serde_json::json!(-5.0), 0),
        ] {
            with["frameRate"] = shown;
            let facts: VideoFacts = serde_json::from_value(with.clone()).unwrap();
            assert_eq!(facts.frame_rate_millis, millis);
        }
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(u64::from(u32::MAX)), "4,294,967,295");
        assert_eq!(seconds(2000), "2 s");
        assert_eq!(seconds(12_345), "12.345 s");
        assert_eq!(seconds(20_500), "20.5 s");
        assert_eq!(seconds(0), "0 s");
    }

    #[test]
    fn extensions() {
        assert_eq!(extension_of("clip.MP4").as_deref(), Some("mp4"));
        assert_eq!(extension_of("holiday.final.JPeg").as_deref(), Some("jpeg"));
        assert_eq!(
            extension_of("C:\\fakepath\\photo.png").as_deref(),
            Some("png")
        );
        assert_eq!(extension_of("dir.d/README"), None);
        assert_eq!(extension_of("clip"), None);
        assert_eq!(extension_of("clip."), None);
        assert_eq!(extension_of(".mp4"), None);
        assert_eq!(extension_of(""), None);
    }
}
