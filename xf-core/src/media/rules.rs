//! What each platform accepts, checked when media is uploaded, before anything is sent: a
//! post that cannot succeed is a `400` naming the platform and the rule.
//!
//! The limits are the platforms' documented ones for API publishing:
//!
//! | platform | video | image | text |
//! |---|---|---|---|
//! | YouTube | 1 s to 12 h | none | title ≤ 100, description ≤ 5,000 bytes, neither with `<` `>` |
//! | Instagram | Reels: 3 s to 15 min, ≤ 300 MB, aspect 0.01:1 to 10:1, H.264/HEVC | JPEG, ≤ 8 MB, aspect 4:5 to 1.91:1 | caption ≤ 2,200, ≤ 30 hashtags, ≤ 20 mentions |
//! | TikTok | 3 s to 10 min, ≤ 4 GB, H.264/HEVC, ≥ 360 px | JPEG or WebP, ≤ 20 MB | caption ≤ 2,200 |
//! | LinkedIn | MP4, 3 s to 30 min, 75 KB to 500 MB | ≤ 36,152,320 pixels | commentary ≤ 3,000 |
//! | Pinterest | 4 s to 15 min, ≤ 2 GB | ≤ 20 MB | title ≤ 100, description ≤ 500; a board |

use serde_json::{Map, Value};

use super::inspect::{ImageFormat, VideoContainer};
use super::model::{FileFacts, Platform, StoredFile};
use crate::error::FieldError;

const MB: u64 = 1_000_000;

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
pub fn check(
    platform: Platform,
    file: &StoredFile,
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
    if platform == Platform::Pinterest && setting("boardId").is_none() {
        refuse(
            field("boardId"),
            "a Pinterest pin goes on a board: give the board's id".into(),
        );
    }
    problems
}

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
    if n >= 1 << 30 && n % (1 << 30) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= MB {
        format!("{} MB", trim(n as f64 / MB as f64))
    } else {
        format!("{} KB", trim(n as f64 / 1000.0))
    }
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
            }),
        }
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
    fn a_short_vertical_video_suits_every_platform_but_needs_a_board_on_pinterest() {
        let clip = video(20_000, 1080, 1920, 5 * MB);
        for platform in Platform::ALL {
            let problems = check(platform, &clip, &Map::new(), NO_TEXT);
            let expected: Vec<&str> = if platform == Platform::Pinterest {
                vec!["pinterest.boardId"]
            } else {
                vec![]
            };
            assert_eq!(fields(&problems), expected, "{platform:?}: {problems:?}");
        }
    }

    #[test]
    fn durations_sizes_and_shapes_are_refused_naming_the_platform() {
        let blip = video(2_000, 1080, 1920, 5 * MB);
        let problems = check(Platform::Instagram, &blip, &Map::new(), NO_TEXT);
        assert_eq!(fields(&problems), vec!["instagram"]);
        assert!(
            problems[0]
                .message
                .contains("3 s to 15 min; this one is 2 s"),
            "{problems:?}"
        );

        let huge = video(60_000, 1080, 1920, 600 * MB);
        let problems = check(Platform::Linkedin, &huge, &Map::new(), NO_TEXT);
        assert!(
            problems[0].message.contains("at most 500 MB"),
            "{problems:?}"
        );

        let ribbon = video(60_000, 4000, 200, 5 * MB);
        let problems = check(Platform::Instagram, &ribbon, &Map::new(), NO_TEXT);
        assert!(problems[0].message.contains("aspect ratio"), "{problems:?}");
        let problems = check(Platform::Tiktok, &ribbon, &Map::new(), NO_TEXT);
        assert!(problems[0].message.contains("360 pixels"), "{problems:?}");

        let png = image(ImageFormat::Png, 1080, 1080, MB);
        let problems = check(Platform::Instagram, &png, &Map::new(), NO_TEXT);
        assert!(problems[0].message.contains("JPEG"), "{problems:?}");
        let tall = image(ImageFormat::Jpeg, 1080, 1920, MB);
        let problems = check(Platform::Instagram, &tall, &Map::new(), NO_TEXT);
        assert!(
            problems[0].message.contains("4:5 to 1.91:1"),
            "{problems:?}"
        );
    }

    #[test]
    fn texts_fall_back_to_the_item_and_are_checked_against_the_platform() {
        let clip = video(20_000, 1080, 1920, 5 * MB);
        let long = "x".repeat(2_300);
        let texts = ItemTexts {
            title: Some("A <b>bold</b> title"),
            description: Some(&long),
        };
        let problems = check(Platform::Youtube, &clip, &Map::new(), texts);
        assert_eq!(fields(&problems), vec!["youtube.title"]);
        let problems = check(Platform::Instagram, &clip, &Map::new(), texts);
        assert_eq!(fields(&problems), vec!["instagram.caption"]);
        let mut settings = Map::new();
        settings.insert("caption".into(), "short #one #two".into());
        assert!(check(Platform::Instagram, &clip, &settings, texts).is_empty());
        let tags: String = (0..31).map(|i| format!("#t{i} ")).collect();
        settings.insert("caption".into(), tags.into());
        let problems = check(Platform::Instagram, &clip, &settings, texts);
        assert!(problems[0].message.contains("30 hashtags"), "{problems:?}");
    }
}
