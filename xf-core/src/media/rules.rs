//! What each platform accepts, checked when media is uploaded, before anything is sent: a
//! post that cannot succeed is a `400` naming the platform and the rule.
//!
//! The limits are the platforms' documented ones for API publishing:
//!
//! | platform | video | image | text |
//! |---|---|---|---|
//! | YouTube | 1 s to 12 h | none | title ≤ 100, description ≤ 5,000 bytes, neither with `<` `>` |
//! | Instagram | Reels: 3 s to 15 min, ≤ 300 MB, aspect 0.01:1 to 10:1, H.264/HEVC, ≤ 1,920 px wide, 23 to 60 fps | JPEG, ≤ 8 MB, aspect 4:5 to 1.91:1 | caption ≤ 2,200, ≤ 30 hashtags, ≤ 20 mentions |
//! | TikTok | 3 s to 10 min, ≤ 4 GB, H.264/HEVC, 360 to 4,096 px a side, 23 to 60 fps | JPEG or WebP, ≤ 20 MB, ≤ 1080p (1,920 × 1,080 either way) | caption ≤ 2,200 |
//! | LinkedIn | MP4, 3 s to 30 min, 75 KB to 500 MB | ≤ 36,152,320 pixels | commentary ≤ 3,000 |
//! | Pinterest | 4 s to 15 min, ≤ 2 GB | ≤ 20 MB | title ≤ 100, description ≤ 500; a board |
//!
//! Frame rates are the video track's average (its sample count over its duration), checked
//! only when the file states its sample count: a fragmented MP4 keeps its samples in fragments,
//! which are not read. Sources: Instagram's "IG User Media" reference (Reel specifications:
//! frame rate 23-60 FPS, maximum columns 1920), TikTok's Content Posting API "Media Transfer
//! Guide" (video: 23 to 60 FPS, 360 to 4096 pixels for both height and width; images: maximum
//! 1080p). Every upload is first held to the sane limits of [`super::inspect`] (pixels, sample
//! counts), far above these.

use serde_json::{Map, Value};

use super::inspect::{ImageFormat, VideoContainer};
use crate::error::FieldError;
use crate::model::media::{FileFacts, Platform, StoredFile};

const MB: u64 = 1_000_000;

/// The frame rates Instagram Reels and TikTok videos take, in thousandths of a frame per
/// second: 23 to 60 FPS (IG User Media, Reel specifications; TikTok Media Transfer Guide,
/// "Framerate restrictions").
const FRAME_RATES_23_TO_60: std::ops::RangeInclusive<u32> = 23_000..=60_000;

/// The widest Instagram Reel, in pixels as displayed (IG User Media, Reel specifications:
/// "Maximum columns (horizontal pixels): 1920").
const INSTAGRAM_REEL_MAX_WIDTH: u32 = 1920;

/// The longest side of a TikTok video, in pixels (Media Transfer Guide, "Picture size
/// restrictions": maximum of 4096 pixels for both height and width).
const TIKTOK_VIDEO_MAX_SIDE: u32 = 4096;

/// The largest TikTok photo, as (longer side, shorter side): 1080p, either way (Media Transfer
/// Guide, image "Picture size restrictions": maximum 1080p).
const TIKTOK_PHOTO_MAX: (u32, u32) = (1920, 1080);

/// The text an item posts with on a platform: its own setting, else the item's.
#[derive(Debug, Clone, Copy)]
pub struct ItemTexts<'a> {
    /// The item's title.
    pub title: Option<&'a str>,
    /// The item's description (the default caption).
    pub description: Option<&'a str>,
}

/// Every rule of `platform` the file and settings break, each naming the platform (and the
/// setting, where one is at fault).
///
/// `files` are the upload's files: one, or a carousel's images in order, each held to the
/// platform's rules for one image, and their number to its carousel sizes
/// ([`carousel_sizes`]).
///
/// One piece: each platform's rules over its settings and the item's texts, one arm per
/// platform, as the platforms document them.
pub fn check(
    platform: Platform,
    files: &[&StoredFile],
    settings: &Map<String, Value>,
    texts: ItemTexts<'_>,
) -> Vec<FieldError> {
    let mut problems = Vec::new();
    let name = platform.as_str();
    let mut refuse = |field: String, message: String| {
        problems.push(FieldError { field, message });
    };
    let setting = |key: &str| {
        settings
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    if let [_, _, ..] = files {
        let (min, max) = carousel_sizes(platform);
        if !(min..=max).contains(&files.len()) {
            refuse(
                name.into(),
                format!(
                    "{} takes carousels of {min} to {max} images; this one has {}",
                    platform.label(),
                    files.len()
                ),
            );
        }
    }
    for (n, file) in files.iter().enumerate() {
        let mut refuse_file = |field: String, message: String| {
            let message = if files.len() > 1 {
                format!(
                    "{message} (image {} of the carousel, {:?})",
                    n + 1,
                    file.name
                )
            } else {
                message
            };
            refuse(field, message);
        };
        file_rules(platform, file, &mut refuse_file);
    }
    // Texts: the platform's own setting, else the item's title or description.
    let title = setting("title").or(texts.title);
    let caption_key = match platform {
        Platform::Youtube | Platform::Pinterest => "description",
        Platform::Instagram | Platform::Tiktok => "caption",
        Platform::Linkedin => "comment",
    };
    let caption = setting(caption_key).or(texts.description);
    let field = |key: &str| format!("{name}.{key}");
    if let (Platform::Youtube | Platform::Pinterest, Some(title)) = (platform, title) {
        if title.chars().count() > 100 {
            refuse(
                field("title"),
                format!("{} titles are at most 100 characters", platform.label()),
            );
        }
    }
    if let Some(caption) = caption {
        let max = match platform {
            Platform::Youtube => 5_000,
            Platform::Instagram | Platform::Tiktok => 2_200,
            Platform::Linkedin => 3_000,
            Platform::Pinterest => 500,
        };
        let length = if platform == Platform::Youtube {
            caption.len()
        } else {
            caption.chars().count()
        };
        if length > max {
            refuse(
                field(caption_key),
                format!(
                    "{} takes at most {max} {} here (the item's description is the default)",
                    platform.label(),
                    if platform == Platform::Youtube {
                        "bytes"
                    } else {
                        "characters"
                    }
                ),
            );
        }
        if platform == Platform::Instagram {
            let hashtags = caption.matches('#').count();
            let mentions = caption.matches('@').count();
            if hashtags > 30 || mentions > 20 {
                refuse(
                    field("caption"),
                    "Instagram captions take at most 30 hashtags and 20 @mentions".into(),
                );
            }
        }
    }
    if platform == Platform::Youtube {
        for (key, text) in [("title", title), ("description", caption)] {
            if text.is_some_and(|t| t.contains(['<', '>'])) {
                refuse(
                    field(key),
                    "YouTube refuses titles and descriptions with < or >".into(),
                );
            }
        }
    }
    // A cover frame (Instagram's `thumb_offset`, TikTok's `video_cover_timestamp_ms`,
    // Pinterest's `cover_image_key_frame_time`) is a moment of the video.
    if let (Some(cover), Some(file)) = (
        settings.get("coverTimestampMs").and_then(Value::as_u64),
        files.first(),
    ) {
        match &file.facts {
            FileFacts::Video(video) if video.duration_ms > 0 && cover >= video.duration_ms => {
                refuse(
                    field("coverTimestampMs"),
                    format!(
                        "the cover frame must be within the video, which is {} ms long; got {cover}",
                        video.duration_ms
                    ),
                );
            }
            FileFacts::Video(_) => {}
            FileFacts::Image(_) => refuse(
                field("coverTimestampMs"),
                "only a video has a cover frame; this upload is an image".into(),
            ),
        }
    }
    problems
}

/// The rules of `platform` for one file, each broken one given to `refuse` (field, message).
///
/// One piece: the platforms' documented file limits as one table, a platform's rows together,
/// read top to bottom against their references; split per platform, the shared checks
/// (duration, size, aspect) would be written five times.
fn file_rules(platform: Platform, file: &StoredFile, refuse: &mut dyn FnMut(String, String)) {
    let name = platform.as_str();
    let size = file.size;
    match &file.facts {
        FileFacts::Video(video) => {
            let seconds = video.duration_ms as f64 / 1000.0;
            let (min_s, max_s) = match platform {
                Platform::Youtube => (1.0, 12.0 * 3600.0),
                Platform::Instagram => (3.0, 15.0 * 60.0),
                Platform::Tiktok => (3.0, 10.0 * 60.0),
                Platform::Linkedin => (3.0, 30.0 * 60.0),
                Platform::Pinterest => (4.0, 15.0 * 60.0),
            };
            if !(min_s..=max_s).contains(&seconds) {
                refuse(
                    name.into(),
                    format!(
                        "{} takes videos of {} to {}; this one is {}",
                        platform.label(),
                        duration(min_s),
                        duration(max_s),
                        duration(seconds)
                    ),
                );
            }
            let max_bytes = match platform {
                Platform::Youtube => 256 << 30,
                Platform::Instagram => 300 * MB,
                Platform::Tiktok => 4 << 30,
                Platform::Linkedin => 500 * MB,
                Platform::Pinterest => 2 << 30,
            };
            if size > max_bytes {
                refuse(
                    name.into(),
                    format!(
                        "{} takes videos of at most {}; this one is {}",
                        platform.label(),
                        bytes(max_bytes),
                        bytes(size)
                    ),
                );
            }
            if platform == Platform::Linkedin && size < 75_000 {
                refuse(
                    name.into(),
                    format!(
                        "LinkedIn takes videos of at least 75 KB; this one is {}",
                        bytes(size)
                    ),
                );
            }
            if platform == Platform::Linkedin && video.container != VideoContainer::Mp4 {
                refuse(
                    name.into(),
                    "LinkedIn takes MP4 videos only, not QuickTime (.mov)".into(),
                );
            }
            let (w, h) = (f64::from(video.width), f64::from(video.height));
            if platform == Platform::Instagram && h > 0.0 && !(0.01..=10.0).contains(&(w / h)) {
                refuse(
                    name.into(),
                    format!(
                        "Instagram Reels must have an aspect ratio from 0.01:1 to 10:1; this \
                         video is {}x{} as displayed",
                        video.width, video.height
                    ),
                );
            }
            let h264_or_hevc = matches!(
                video.video_codec.as_str(),
                "avc1" | "avc3" | "hvc1" | "hev1"
            );
            if matches!(platform, Platform::Instagram | Platform::Tiktok) && !h264_or_hevc {
                refuse(
                    name.into(),
                    format!(
                        "{} takes H.264 or HEVC video; this one is {:?}",
                        platform.label(),
                        video.video_codec
                    ),
                );
            }
            if platform == Platform::Tiktok && video.width.min(video.height) < 360 {
                refuse(
                    name.into(),
                    format!(
                        "TikTok takes videos at least 360 pixels on each side; this one is {}x{}",
                        video.width, video.height
                    ),
                );
            }
            if platform == Platform::Tiktok && video.width.max(video.height) > TIKTOK_VIDEO_MAX_SIDE
            {
                refuse(
                    name.into(),
                    format!(
                        "TikTok takes videos at most {TIKTOK_VIDEO_MAX_SIDE} pixels on each side; \
                         this one is {}x{}",
                        video.width, video.height
                    ),
                );
            }
            if platform == Platform::Instagram && video.width > INSTAGRAM_REEL_MAX_WIDTH {
                refuse(
                    name.into(),
                    format!(
                        "Instagram takes Reels at most {INSTAGRAM_REEL_MAX_WIDTH} pixels wide; \
                         this one is {}x{} as displayed",
                        video.width, video.height
                    ),
                );
            }
            // Only when the file states its frame rate (0 is unknown).
            let rate = video.frame_rate_millis;
            if matches!(platform, Platform::Instagram | Platform::Tiktok)
                && rate > 0
                && !FRAME_RATES_23_TO_60.contains(&rate)
            {
                refuse(
                    name.into(),
                    format!(
                        "{} takes videos of 23 to 60 frames per second; this one is {} fps",
                        platform.label(),
                        fps(rate)
                    ),
                );
            }
        }
        FileFacts::Image(image) => {
            let max_bytes = match platform {
                Platform::Instagram => 8 * MB,
                Platform::Tiktok | Platform::Pinterest => 20 * MB,
                Platform::Linkedin | Platform::Youtube => u64::MAX,
            };
            if size > max_bytes {
                refuse(
                    name.into(),
                    format!(
                        "{} takes images of at most {}; this one is {}",
                        platform.label(),
                        bytes(max_bytes),
                        bytes(size)
                    ),
                );
            }
            let format_ok = match platform {
                Platform::Instagram => image.format == ImageFormat::Jpeg,
                Platform::Tiktok => matches!(image.format, ImageFormat::Jpeg | ImageFormat::Webp),
                _ => true,
            };
            if !format_ok {
                refuse(
                    name.into(),
                    format!(
                        "{} takes {} images only",
                        platform.label(),
                        if platform == Platform::Instagram {
                            "JPEG"
                        } else {
                            "JPEG or WebP"
                        }
                    ),
                );
            }
            let (w, h) = (f64::from(image.width), f64::from(image.height));
            if platform == Platform::Instagram && h > 0.0 && !(0.8..=1.91).contains(&(w / h)) {
                refuse(
                    name.into(),
                    format!(
                        "Instagram takes images with an aspect ratio from 4:5 to 1.91:1; this \
                         one is {}x{}",
                        image.width, image.height
                    ),
                );
            }
            let (longer, shorter) = (image.width.max(image.height), image.width.min(image.height));
            if platform == Platform::Tiktok
                && (longer > TIKTOK_PHOTO_MAX.0 || shorter > TIKTOK_PHOTO_MAX.1)
            {
                refuse(
                    name.into(),
                    format!(
                        "TikTok takes photos of at most 1080p ({}x{} either way); this one is \
                         {}x{}",
                        TIKTOK_PHOTO_MAX.0, TIKTOK_PHOTO_MAX.1, image.width, image.height
                    ),
                );
            }
            if platform == Platform::Linkedin
                && u64::from(image.width) * u64::from(image.height) > 36_152_320
            {
                refuse(
                    name.into(),
                    "LinkedIn takes images of at most 36,152,320 pixels".into(),
                );
            }
        }
    }
}

/// How many images a carousel of `platform` may have, by its API: Instagram 2 to 10 (IG User
/// Media, `children`), TikTok 1 to 35 photos (Content Posting API, `photo_images`), LinkedIn 2
/// to 20 (MultiImage API), Pinterest 2 to 5 (Pins API, `multiple_image_urls`). YouTube takes
/// no images.
pub fn carousel_sizes(platform: Platform) -> (usize, usize) {
    match platform {
        Platform::Instagram => (2, 10),
        Platform::Tiktok => (1, 35),
        Platform::Linkedin => (2, 20),
        Platform::Pinterest => (2, 5),
        Platform::Youtube => (0, 0),
    }
}

/// The most images an upload form may carry: the largest carousel any platform takes
/// (TikTok's 35 photos).
pub const CAROUSEL_MAX: usize = 35;

fn duration(seconds: f64) -> String {
    if seconds >= 3600.0 {
        format!("{} h", trim(seconds / 3600.0))
    } else if seconds >= 60.0 {
        format!("{} min", trim(seconds / 60.0))
    } else {
        format!("{} s", trim(seconds))
    }
}

fn bytes(n: u64) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else if n >= MB {
        format!("{} MB", trim(n as f64 / MB as f64))
    } else {
        format!("{} KB", trim(n as f64 / 1000.0))
    }
}

/// A frame rate in thousandths as frames per second, exactly, without trailing zeros:
/// "29.97", "10", "23.976" (so a refused 60.004 never reads as 60).
fn fps(millis: u32) -> String {
    let text = format!("{}.{:03}", millis / 1000, millis % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn trim(value: f64) -> String {
    let text = format!("{value:.1}");
    text.strip_suffix(".0").map(str::to_owned).unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::inspect::{ImageFacts, VideoFacts};

    fn video(duration_ms: u64, width: u32, height: u32, size: u64) -> StoredFile {
        StoredFile {
            key: "k".into(),
            name: "clip.mp4".into(),
            size,
            facts: FileFacts::Video(VideoFacts {
                container: VideoContainer::Mp4,
                duration_ms,
                width,
                height,
                rotation: 0,
                video_codec: "avc1".into(),
                audio_codec: None,
                frame_rate_millis: 0,
            }),
        }
    }

    /// [`video`] whose file states a frame rate (in thousandths of a frame per second).
    fn video_at(fps_millis: u32, width: u32, height: u32) -> StoredFile {
        let mut file = video(20_000, width, height, 5 * MB);
        if let FileFacts::Video(facts) = &mut file.facts {
            facts.frame_rate_millis = fps_millis;
        }
        file
    }

    fn image(format: ImageFormat, width: u32, height: u32, size: u64) -> StoredFile {
        StoredFile {
            key: "k".into(),
            name: "pic.jpg".into(),
            size,
            facts: FileFacts::Image(ImageFacts {
                format,
                width,
                height,
            }),
        }
    }

    const NO_TEXT: ItemTexts<'static> = ItemTexts {
        title: None,
        description: None,
    };

    fn fields(problems: &[FieldError]) -> Vec<&str> {
        problems.iter().map(|p| p.field.as_str()).collect()
    }

    #[test]
    fn a_cover_frame_is_a_moment_of_the_video() {
        let clip = video(20_000, 1080, 1920, 5 * MB);
        let cover = |ms: u64| {
            let mut settings = Map::new();
            settings.insert("coverTimestampMs".into(), Value::from(ms));
            settings
        };
        for platform in [Platform::Instagram, Platform::Tiktok, Platform::Pinterest] {
            assert!(check(platform, &[&clip], &cover(19_999), NO_TEXT).is_empty());
            let late = check(platform, &[&clip], &cover(20_000), NO_TEXT);
            let field = format!("{}.coverTimestampMs", platform.as_str());
            assert_eq!(fields(&late), vec![field.as_str()]);
            assert!(late[0].message.contains("20000 ms long"), "{late:?}");
        }
        let photo = image(ImageFormat::Jpeg, 1080, 1080, MB);
        let problems = check(Platform::Instagram, &[&photo], &cover(0), NO_TEXT);
        assert_eq!(fields(&problems), vec!["instagram.coverTimestampMs"]);
        assert!(problems[0].message.contains("only a video"), "{problems:?}");
    }

    #[test]
    fn a_short_vertical_video_suits_every_platform() {
        // (Pinterest's board is the channel's business: see `Xf::targets`.)
        let clip = video(20_000, 1080, 1920, 5 * MB);
        for platform in Platform::ALL {
            let problems = check(platform, &[&clip], &Map::new(), NO_TEXT);
            assert_eq!(
                fields(&problems),
                Vec::<&str>::new(),
                "{platform:?}: {problems:?}"
            );
        }
    }

    #[test]
    fn durations_sizes_and_shapes_are_refused_naming_the_platform() {
        let blip = video(2_000, 1080, 1920, 5 * MB);
        let problems = check(Platform::Instagram, &[&blip], &Map::new(), NO_TEXT);
        assert_eq!(fields(&problems), vec!["instagram"]);
        assert!(
            problems[0]
                .message
                .contains("3 s to 15 min; this one is 2 s"),
            "{problems:?}"
        );

        let huge = video(60_000, 1080, 1920, 600 * MB);
        let problems = check(Platform::Linkedin, &[&huge], &Map::new(), NO_TEXT);
        assert!(
            problems[0].message.contains("at most 500 MB"),
            "{problems:?}"
        );

        let ribbon = video(60_000, 4000, 200, 5 * MB);
        let problems = check(Platform::Instagram, &[&ribbon], &Map::new(), NO_TEXT);
        assert!(problems[0].message.contains("aspect ratio"), "{problems:?}");
        let problems = check(Platform::Tiktok, &[&ribbon], &Map::new(), NO_TEXT);
        assert!(problems[0].message.contains("360 pixels"), "{problems:?}");

        let png = image(ImageFormat::Png, 1080, 1080, MB);
        let problems = check(Platform::Instagram, &[&png], &Map::new(), NO_TEXT);
        assert!(problems[0].message.contains("JPEG"), "{problems:?}");
        let tall = image(ImageFormat::Jpeg, 1080, 1920, MB);
        let problems = check(Platform::Instagram, &[&tall], &Map::new(), NO_TEXT);
        assert!(
            problems[0].message.contains("4:5 to 1.91:1"),
            "{problems:?}"
        );
    }

    #[test]
    fn frame_rates_are_held_to_23_to_60_fps_on_instagram_and_tiktok_when_known() {
        for platform in [Platform::Instagram, Platform::Tiktok] {
            for ok in [23_000, 23_976, 29_970, 30_000, 60_000] {
                let clip = video_at(ok, 1080, 1920);
                assert!(
                    check(platform, &[&clip], &Map::new(), NO_TEXT).is_empty(),
                    "{platform:?} at {ok}"
                );
            }
            for (bad, shown) in [(10_000, "10"), (22_980, "22.98"), (60_004, "60.004")] {
                let problems = check(
                    platform,
                    &[&video_at(bad, 1080, 1920)],
                    &Map::new(),
                    NO_TEXT,
                );
                assert_eq!(fields(&problems), vec![platform.as_str()], "{problems:?}");
                assert_eq!(
                    problems[0].message,
                    format!(
                        "{} takes videos of 23 to 60 frames per second; this one is {shown} fps",
                        platform.label()
                    )
                );
            }
        }
        // Unknown (a fragmented MP4, or an item stored before frame rates were read): no rule.
        assert!(check(
            Platform::Tiktok,
            &[&video_at(0, 1080, 1920)],
            &Map::new(),
            NO_TEXT
        )
        .is_empty());
        // The other platforms document no frame rate we hold them to.
        for platform in [Platform::Youtube, Platform::Linkedin] {
            let slow = video_at(10_000, 1080, 1920);
            assert!(
                check(platform, &[&slow], &Map::new(), NO_TEXT).is_empty(),
                "{platform:?}"
            );
        }
    }

    #[test]
    fn instagram_reels_are_at_most_1920_wide_and_tiktok_videos_4096_a_side() {
        let wide = video_at(30_000, 3840, 2160);
        let problems = check(Platform::Instagram, &[&wide], &Map::new(), NO_TEXT);
        assert_eq!(fields(&problems), vec!["instagram"]);
        assert_eq!(
            problems[0].message,
            "Instagram takes Reels at most 1920 pixels wide; this one is 3840x2160 as displayed"
        );
        for fits in [video_at(30_000, 1920, 1080), video_at(30_000, 1080, 1920)] {
            assert!(check(Platform::Instagram, &[&fits], &Map::new(), NO_TEXT).is_empty());
        }
        // 4K UHD fits TikTok; 8K does not.
        assert!(check(Platform::Tiktok, &[&wide], &Map::new(), NO_TEXT).is_empty());
        let tall = video_at(30_000, 4320, 7680);
        let problems = check(Platform::Tiktok, &[&tall], &Map::new(), NO_TEXT);
        assert_eq!(fields(&problems), vec!["tiktok"]);
        assert_eq!(
            problems[0].message,
            "TikTok takes videos at most 4096 pixels on each side; this one is 4320x7680"
        );
        // YouTube takes 8K.
        assert!(check(Platform::Youtube, &[&tall], &Map::new(), NO_TEXT).is_empty());
    }

    #[test]
    fn tiktok_photos_are_at_most_1080p_either_way() {
        for (w, h) in [(1920, 1080), (1080, 1920), (1080, 1080), (640, 480)] {
            let photo = image(ImageFormat::Jpeg, w, h, MB);
            assert!(
                check(Platform::Tiktok, &[&photo], &Map::new(), NO_TEXT).is_empty(),
                "{w}x{h}"
            );
        }
        for (w, h) in [(4000, 3000), (1921, 1080), (1440, 1440), (1080, 2400)] {
            let photo = image(ImageFormat::Webp, w, h, MB);
            let problems = check(Platform::Tiktok, &[&photo], &Map::new(), NO_TEXT);
            assert_eq!(fields(&problems), vec!["tiktok"], "{w}x{h}");
            assert_eq!(
                problems[0].message,
                format!(
                    "TikTok takes photos of at most 1080p (1920x1080 either way); this one is \
                     {w}x{h}"
                )
            );
        }
        // Pinterest documents no such maximum.
        let big = image(ImageFormat::Jpeg, 4000, 3000, MB);
        let settings: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"boardId": "b"})).unwrap();
        assert!(check(Platform::Pinterest, &[&big], &settings, NO_TEXT).is_empty());
    }

    #[test]
    fn frame_rates_read_as_fps() {
        assert_eq!(fps(29_970), "29.97");
        assert_eq!(fps(10_000), "10");
        assert_eq!(fps(23_976), "23.976");
        assert_eq!(fps(60_004), "60.004");
        assert_eq!(fps(100_000), "100");
        assert_eq!(fps(60_500), "60.5");
    }

    #[test]
    fn texts_fall_back_to_the_item_and_are_checked_against_the_platform() {
        let clip = video(20_000, 1080, 1920, 5 * MB);
        let long = "x".repeat(2_300);
        let texts = ItemTexts {
            title: Some("A <b>bold</b> title"),
            description: Some(&long),
        };
        let problems = check(Platform::Youtube, &[&clip], &Map::new(), texts);
        assert_eq!(fields(&problems), vec!["youtube.title"]);
        let problems = check(Platform::Instagram, &[&clip], &Map::new(), texts);
        assert_eq!(fields(&problems), vec!["instagram.caption"]);
        let mut settings = Map::new();
        settings.insert("caption".into(), "short #one #two".into());
        assert!(check(Platform::Instagram, &[&clip], &settings, texts).is_empty());
        let tags: String = (0..31).map(|i| format!("#t{i} ")).collect();
        settings.insert("caption".into(), tags.into());
        let problems = check(Platform::Instagram, &[&clip], &settings, texts);
        assert!(problems[0].message.contains("30 hashtags"), "{problems:?}");
    }

    #[test]
    fn a_carousel_is_held_to_each_platform_s_sizes_and_each_image_to_its_rules() {
        let photo = |name: &str, format: ImageFormat| StoredFile {
            key: "k".into(),
            name: name.into(),
            size: 100_000,
            facts: FileFacts::Image(ImageFacts {
                format,
                width: 1080,
                height: 1080,
            }),
        };
        let jpeg = photo("a.jpg", ImageFormat::Jpeg);
        let within = |n: usize| vec![&jpeg; n];
        for (platform, min, max) in [
            (Platform::Instagram, 2, 10),
            (Platform::Tiktok, 1, 35),
            (Platform::Linkedin, 2, 20),
            (Platform::Pinterest, 2, 5),
        ] {
            assert_eq!(carousel_sizes(platform), (min, max));
            for n in [min.max(2), max] {
                assert!(check(platform, &within(n), &Map::new(), NO_TEXT).is_empty());
            }
            let over = check(platform, &within(max + 1), &Map::new(), NO_TEXT);
            assert_eq!(over.len(), 1, "{platform:?}");
            assert_eq!(over[0].field, platform.as_str());
            assert!(over[0]
                .message
                .contains(&format!("{min} to {max} images; this one has {}", max + 1)));
        }
        assert!(CAROUSEL_MAX >= carousel_sizes(Platform::Tiktok).1);
        // One image that breaks a rule is named; a single file's refusal names none.
        let png = photo("b.png", ImageFormat::Png);
        let problems = check(
            Platform::Instagram,
            &[&jpeg, &png, &jpeg],
            &Map::new(),
            NO_TEXT,
        );
        assert_eq!(problems.len(), 1);
        assert!(problems[0]
            .message
            .ends_with("(image 2 of the carousel, \"b.png\")"));
        let alone = check(Platform::Instagram, &[&png], &Map::new(), NO_TEXT);
        assert_eq!(alone[0].message, "Instagram takes JPEG images only");
    }
}
