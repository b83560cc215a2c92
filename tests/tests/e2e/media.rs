//! The media publishing API through the service: uploads of real sample files (made by
//! ffmpeg) in multipart forms, content checks, platform settings and target accounts, media
//! items and lists, channels, its envelope, keys and plans, and tenant isolation.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use serde_json::{json, Value};
use xf_core::media::blob::LocalBlobStore;
use xf_core::MediaLimits;
use xf_tests::media::{carousel_jpegs, grainy_video, image, multipart, video};
use xf_tests::{Reply, TestApp};

crate::backends!(
    video_upload_reads_the_file_and_plans_each_platform,
    images_of_each_format_are_read,
    bad_uploads_are_refused_and_leave_nothing,
    platform_settings_and_accounts_are_checked,
    lists_page_and_filter_newest_first,
    keys_plans_envelopes_and_tenants,
    uploads_with_an_idempotency_key_happen_once,
    forms_are_read_within_their_limits,
    pixel_and_sample_bombs_are_refused_naming_the_limit,
    the_sweep_deletes_the_blobs_nothing_names,
    a_carousel_is_stored_in_order_and_checked_per_platform,
    a_file_removed_before_its_form_ended_is_the_clients_400,
    nul_and_twice_given_keys_in_settings_are_named,
    an_image_without_platforms_is_settled_at_once,
);

/// A media organization (`plus` plan) and its keys.
struct MediaOrg {
    id: String,
    live: String,
    test: String,
}

async fn media_org(app: &TestApp, name: &str) -> MediaOrg {
    let created = app.organization(name, "plus").await;
    MediaOrg {
        id: created.organization.id.to_string(),
        live: created.live_key,
        test: created.test_key,
    }
}

/// Connects a channel through the admin API.
async fn connect(app: &TestApp, org: &MediaOrg, platform: &str, account: &str) -> Value {
    let reply = app
        .admin(
            Method::POST,
            &format!("/organizations/{}/channels", org.id),
            Some(json!({
                "platform": platform,
                "accountId": account,
                "displayName": format!("{account} name"),
                "thumbnail": "https://cdn.example/a.png",
                "accessToken": format!("token-of-{account}"),
                "refreshToken": "refresh",
                "expiresAt": "2026-12-01T00:00:00Z",
            })),
        )
        .await;
    reply.expect(201)["channel"].clone()
}

/// Sends an upload form with `X-API-Key`.
pub(crate) async fn upload(
    app: &TestApp,
    key: &str,
    path: &str,
    fields: &[(&str, &str)],
    file: Option<(&str, &[u8])>,
) -> Reply {
    let (content_type, body) = multipart(fields, file);
    let request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("x-api-key", key)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("a request");
    app.send(request).await
}

/// A media request with `X-API-Key`.
async fn get(app: &TestApp, key: &str, path: &str) -> Reply {
    let request = Request::builder()
        .uri(path)
        .header("x-api-key", key)
        .body(Full::new(Bytes::new()))
        .expect("a request");
    app.send(request).await
}

/// Asserts the media success envelope and returns `data`.
#[track_caller]
fn ok(reply: &Reply, status: u16) -> &Value {
    assert_eq!(reply.status.as_u16(), status, "{}", reply.body);
    assert_eq!(reply.body["success"], true, "{}", reply.body);
    assert!(reply.body["meta"]["requestId"].is_string());
    &reply.body["data"]
}

/// Asserts the media error envelope with `code`, and returns the fields it names.
#[track_caller]
fn refused(reply: &Reply, status: u16, code: &str) -> Vec<String> {
    assert_eq!(reply.status.as_u16(), status, "{}", reply.body);
    assert_eq!(reply.body["success"], false, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], code, "{}", reply.body);
    assert!(reply.body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    reply.body["error"]["details"]
        .as_array()
        .map(|details| {
            details
                .iter()
                .map(|d| d["field"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The app with its blob store in a fresh directory (returned) and small image limits.
fn with_blobs(app: TestApp, max_image_bytes: u64) -> (TestApp, std::path::PathBuf) {
    let root = std::env::temp_dir().join(format!("xf-media-test-{}", uuid_like()));
    let blobs = LocalBlobStore::new(&root).expect("a blob directory");
    let app = app.reconfigured(|builder| {
        builder
            .blob_store(std::sync::Arc::new(blobs))
            .media_limits(MediaLimits {
                max_video_bytes: 4 << 30,
                max_image_bytes,
                ..MediaLimits::default()
            })
    });
    (app, root)
}

fn uuid_like() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// The files below the blob directory, `.partial/` included (but not the lock files of the
/// stores that write there).
pub(crate) fn stored_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_none_or(|e| e != "lock") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(root, &mut found);
    found
}

pub(crate) async fn video_upload_reads_the_file_and_plans_each_platform(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Studio").await;
    connect(&app, &org, "youtube", "UC-studio").await;
    connect(&app, &org, "tiktok", "tt-1").await;
    connect(&app, &org, "tiktok", "tt-2").await;
    let clip = video("mp4", 640, 360, 4, true, 90);

    let reply = upload(
        &app,
        &org.live,
        "/media/videos",
        &[
            ("title", "Launch"),
            ("description", "Our launch"),
            ("platforms", r#"["youtube", "tiktok"]"#),
            (
                "youtube",
                r#"{"privacy": "unlisted", "title": "Launch day"}"#,
            ),
            ("youtubeTitle", "loses to the nested title"),
            ("tiktokPrivacy", "SELF_ONLY"),
            ("selectedTiktokAccounts", r#"["tt-2"]"#),
        ],
        Some(("launch.MP4", &clip)),
    )
    .await;
    let data = ok(&reply, 201);
    assert_eq!(reply.body["message"], "video uploaded");
    let items = data.as_array().unwrap();
    assert_eq!(items.len(), 1);
    let id = items[0]["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("med_"));
    assert_eq!(
        items[0],
        json!({"id": id, "title": "Launch", "status": "pending", "platforms": ["youtube", "tiktok"]})
    );

    let item = get(&app, &org.live, &format!("/media/videos/{id}")).await;
    let item = ok(&item, 200);
    assert_eq!(item["kind"], "video");
    assert_eq!(item["description"], "Our launch");
    assert_eq!(item["scheduledAt"], Value::Null);
    assert_eq!(item["file"]["name"], "launch.MP4");
    assert_eq!(item["file"]["size"], clip.len());
    assert_eq!(item["file"]["container"], "mp4");
    assert_eq!(item["file"]["durationMs"], 4000);
    // Turned a quarter: shown 360 wide and 640 high. ffmpeg 5 writes `rotate=90` as a
    // matrix that turns the picture counterclockwise, which is 270° clockwise, the way
    // `rotation` counts (as phones record portrait video: 90° clockwise).
    assert_eq!(
        (
            item["file"]["width"].clone(),
            item["file"]["height"].clone()
        ),
        (json!(360), json!(640))
    );
    assert_eq!(item["file"]["rotation"], 270);
    assert_eq!(item["file"]["videoCodec"], "avc1");
    assert_eq!(item["file"]["audioCodec"], "mp4a");
    // A publishing job waits for each post.
    assert_eq!(item["youtube"]["status"], "pending");
    assert_eq!(item["youtube"]["videoId"], Value::Null);
    assert_eq!(
        item["youtube"]["posts"],
        json!([{"account": "UC-studio", "status": "pending", "videoId": null, "url": null, "error": null}])
    );
    assert_eq!(item["youtube"]["accounts"], json!(["UC-studio"]));
    assert_eq!(
        item["youtube"]["settings"],
        json!({"title": "Launch day", "privacy": "unlisted"})
    );
    assert_eq!(item["tiktok"]["accounts"], json!(["tt-2"]));
    assert_eq!(item["tiktok"]["settings"], json!({"privacy": "SELF_ONLY"}));
    assert_eq!(
        item["instagram"],
        json!({"status": "idle", "mediaId": null, "url": null})
    );
    assert_eq!(
        item["linkedin"],
        json!({"status": "idle", "urn": null, "url": null})
    );
    assert_eq!(
        item["pinterest"],
        json!({"status": "idle", "pinId": null, "url": null})
    );
    assert_eq!(item["createdAt"], "2026-11-16T10:20:30.000Z");
    // The file is kept, and nothing else.
    assert_eq!(stored_files(&root).len(), 1);

    // A QuickTime movie without sound, as a draft, and a scheduled one, on the legacy path.
    let movie = video("mov", 160, 120, 1, false, 0);
    let draft = upload(
        &app,
        &org.live,
        "/media/videos",
        &[("platforms", r#"["youtube"]"#), ("isDraft", "true")],
        Some(("clip.mov", &movie)),
    )
    .await;
    let draft_id = ok(&draft, 201)[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(ok(&draft, 201)[0]["status"], "draft");
    let shown = get(&app, &org.live, &format!("/media/videos/{draft_id}")).await;
    let shown = ok(&shown, 200);
    assert_eq!(shown["file"]["container"], "mov");
    assert_eq!(
        (
            shown["file"]["width"].clone(),
            shown["file"]["height"].clone()
        ),
        (json!(160), json!(120))
    );
    assert_eq!(shown["file"]["durationMs"], 1000);
    assert_eq!(shown["file"]["audioCodec"], Value::Null);
    // A draft never runs: its posts stay idle.
    assert_eq!(shown["youtube"]["status"], "idle");
    assert_eq!(shown["youtube"]["posts"][0]["status"], "idle");
    let movie = video("mov", 640, 360, 4, false, 0);
    let scheduled = upload(
        &app,
        &org.live,
        "/video/upload",
        &[
            ("platforms", r#"["tiktok"]"#),
            ("scheduledAt", "2026-12-24T18:00:00Z"),
            ("selectedTiktokAccounts", "tt-1"),
        ],
        Some(("clip.mov", &movie)),
    )
    .await;
    assert_eq!(ok(&scheduled, 201)[0]["status"], "scheduled");
    let scheduled_id = ok(&scheduled, 201)[0]["id"].as_str().unwrap().to_owned();
    let shown = get(&app, &org.live, &format!("/media/videos/{scheduled_id}")).await;
    // Scheduled: the post is idle until its time.
    assert_eq!(ok(&shown, 200)["tiktok"]["status"], "idle");
    let _ = std::fs::remove_dir_all(root);
}

pub(crate) async fn images_of_each_format_are_read(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Gallery").await;
    connect(&app, &org, "instagram", "ig-1").await;
    connect(&app, &org, "pinterest", "pin-1").await;
    for (format, name) in [
        ("png", "a.png"),
        ("jpg", "b.JPG"),
        ("jpg", "c.jpeg"),
        ("webp", "d.webp"),
    ] {
        let bytes = image(format, 64, 48);
        // Instagram takes JPEG only; Pinterest every format.
        let (platforms, settings) = if format == "jpg" {
            (r#"["instagram"]"#, ("instagramCaption", "hi"))
        } else {
            (r#"["pinterest"]"#, ("pinterestBoardId", "board-1"))
        };
        let reply = upload(
            &app,
            &org.live,
            "/media/images",
            &[("platforms", platforms), settings],
            Some((name, &bytes)),
        )
        .await;
        let id = ok(&reply, 201)[0]["id"].as_str().unwrap().to_owned();
        let item = get(&app, &org.live, &format!("/media/images/{id}")).await;
        let item = ok(&item, 200);
        let expected = if format == "jpg" { "jpeg" } else { format };
        assert_eq!(
            item["file"],
            json!({"name": name, "size": bytes.len(), "format": expected, "width": 64, "height": 48})
        );
        if format == "jpg" {
            assert_eq!(item["instagram"]["settings"], json!({"caption": "hi"}));
        } else {
            assert_eq!(item["pinterest"]["settings"], json!({"boardId": "board-1"}));
            // A PNG or WebP for Instagram is refused before anything is stored.
            let refused_form = upload(
                &app,
                &org.live,
                "/media/images",
                &[("platforms", r#"["instagram"]"#)],
                Some((name, &bytes)),
            )
            .await;
            refused(&refused_form, 400, "validation_error");
            assert_eq!(
                refused_form.body["error"]["details"][0]["field"],
                "instagram"
            );
        }
        // An image is not a video.
        get(&app, &org.live, &format!("/media/videos/{id}")).await;
        refused(
            &get(&app, &org.live, &format!("/media/videos/{id}")).await,
            404,
            "not_found",
        );
    }
    // Images may go nowhere yet.
    let bytes = image("png", 8, 8);
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &[],
        Some(("x.png", &bytes)),
    )
    .await;
    assert_eq!(ok(&reply, 201)[0]["platforms"], json!([]));
    let _ = std::fs::remove_dir_all(root);
}

/// A refused upload: what it is, its file, its fields, and the status, code and field of the
/// answer.
type Case<'a> = (
    &'a str,
    Option<(&'a str, Vec<u8>)>,
    Vec<(&'a str, &'a str)>,
    u16,
    &'a str,
    &'a str,
);

async fn bad_uploads_are_refused_and_leave_nothing(app: TestApp) {
    let (app, root) = with_blobs(app, 2_000);
    let org = media_org(&app, "Studio").await;
    connect(&app, &org, "youtube", "UC-1").await;
    let clip = video("mp4", 160, 120, 1, true, 0);
    let png = image("png", 32, 32);
    let platforms = [("platforms", r#"["youtube"]"#)];
    let cases: Vec<Case> = vec![
        (
            "wrong extension",
            Some(("clip.avi", clip.clone())),
            platforms.to_vec(),
            400,
            "validation_error",
            "file",
        ),
        (
            "no extension",
            Some(("clip", clip.clone())),
            platforms.to_vec(),
            400,
            "validation_error",
            "file",
        ),
        (
            "content of another kind",
            Some(("clip.mp4", png.clone())),
            platforms.to_vec(),
            400,
            "validation_error",
            "file",
        ),
        (
            "mp4 named mov",
            Some(("clip.mov", clip.clone())),
            platforms.to_vec(),
            400,
            "validation_error",
            "file",
        ),
        (
            "truncated",
            Some(("clip.mp4", clip[..clip.len() / 2].to_vec())),
            platforms.to_vec(),
            400,
            "validation_error",
            "file",
        ),
        (
            "empty",
            Some(("clip.mp4", Vec::new())),
            platforms.to_vec(),
            400,
            "validation_error",
            "file",
        ),
        (
            "missing file and fileId",
            None,
            platforms.to_vec(),
            400,
            "validation_error",
            "file",
        ),
        (
            "both file and fileId",
            Some(("clip.mp4", clip.clone())),
            vec![("platforms", r#"["youtube"]"#), ("fileId", "upl_x")],
            400,
            "validation_error",
            "fileId",
        ),
        (
            "bad platforms JSON",
            Some(("clip.mp4", clip.clone())),
            vec![("platforms", "[youtube")],
            400,
            "validation_error",
            "platforms",
        ),
        (
            "unknown platform",
            Some(("clip.mp4", clip.clone())),
            vec![("platforms", r#"["myspace"]"#)],
            400,
            "validation_error",
            "platforms",
        ),
        (
            "bad setting value",
            Some(("clip.mp4", clip.clone())),
            vec![
                ("platforms", r#"["youtube"]"#),
                ("youtubePrivacy", "secret"),
            ],
            400,
            "validation_error",
            "youtubePrivacy",
        ),
    ];
    for (what, file, fields, status, code, field) in cases {
        let file = file.as_ref().map(|(name, bytes)| (*name, bytes.as_slice()));
        let reply = upload(&app, &org.live, "/media/videos", &fields, file).await;
        let named = refused(&reply, status, code);
        assert!(
            named.contains(&field.to_owned()),
            "{what}: {named:?} {}",
            reply.body
        );
        assert!(stored_files(&root).is_empty(), "{what} left a file");
    }
    // Over the (small, configured) image limit.
    let big = image("png", 256, 256);
    assert!(big.len() > 2_000);
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &[],
        Some(("big.png", &big)),
    )
    .await;
    refused(&reply, 413, "payload_too_large");
    assert!(stored_files(&root).is_empty());
    // Not a multipart body at all.
    let reply = app
        .send(xf_tests::request(
            Method::POST,
            "/media/videos",
            Some(&org.live),
            Some("{}".into()),
            &[],
        ))
        .await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["body"]);
    let list = get(&app, &org.live, "/media/videos").await;
    assert_eq!(ok(&list, 200)["pagination"]["total"], 0);
    let _ = std::fs::remove_dir_all(root);
}

/// Sends a raw form body.
async fn send_form(app: &TestApp, key: &str, content_type: &str, body: Vec<u8>) -> Reply {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/media/images")
        .header("x-api-key", key)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("a request");
    app.send(request).await
}

fn message(reply: &Reply) -> String {
    reply.body["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

async fn forms_are_read_within_their_limits(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Forms").await;
    connect(&app, &org, "pinterest", "pin-1").await;
    let png = image("png", 32, 32);
    let board = [("platforms", r#"["pinterest"]"#), ("pinterestBoardId", "b")];

    // A text field past 64 KiB: refused naming the field and the limit, without echoing it.
    let long = "a".repeat(1 << 20);
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &[board[0], board[1], ("title", &long)],
        Some(("a.png", &png)),
    )
    .await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["title"]);
    assert!(message(&reply).contains("65536 bytes"), "{}", reply.body);
    assert!(reply.body.to_string().len() < 1024);

    // More parts than 256.
    let many: Vec<(String, String)> = (0..300).map(|n| (format!("f{n}"), "x".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &many,
        Some(("a.png", &png)),
    )
    .await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["body"]);
    assert!(
        message(&reply).contains("more than 256 parts"),
        "{}",
        reply.body
    );

    // More than 1 MiB of text in all, each field within its limit.
    let chunk = "b".repeat(60_000);
    let fields: Vec<(String, String)> = (0..20).map(|n| (format!("x{n}"), chunk.clone())).collect();
    let fields: Vec<(&str, &str)> = fields
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let reply = upload(&app, &org.live, "/media/images", &fields, None).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["body"]);
    assert!(
        message(&reply).contains("1048576 bytes in all"),
        "{}",
        reply.body
    );

    // A field name of 10 KB, and part headers that never end: refused, nothing echoed.
    let (content_type, _) = multipart(&[], None);
    let boundary = content_type.split("boundary=").nth(1).unwrap().to_owned();
    let name = "n".repeat(10_000);
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\nv\r\n--{boundary}--\r\n"
    );
    let reply = send_form(&app, &org.live, &content_type, body.into_bytes()).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["body"]);
    assert!(reply.body.to_string().len() < 1024, "{}", reply.body);
    let endless = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"a\"\r\nX: {}",
        "y".repeat(100_000)
    );
    let reply = send_form(&app, &org.live, &content_type, endless.into_bytes()).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["body"]);
    assert!(message(&reply).contains("8192 bytes"), "{}", reply.body);

    // Not a form, and a form without its closing boundary.
    let reply = send_form(&app, &org.live, "multipart/form-data", b"x".to_vec()).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["body"]);
    let (content_type, body) = multipart(&board, Some(("a.png", &png)));
    let cut = body[..body.len() - 10].to_vec();
    let reply = send_form(&app, &org.live, &content_type, cut).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["file"]);
    assert!(stored_files(&root).is_empty());

    // Within every limit, the form is taken.
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &board,
        Some(("a.png", &png)),
    )
    .await;
    ok(&reply, 201);
    let _ = std::fs::remove_dir_all(root);
}

/// `bytes` with the 32-bit number `skip` bytes after the version and flags of the first
/// `fourcc` box set to `value`.
fn patched(bytes: &[u8], fourcc: &[u8; 4], skip: usize, value: u32) -> Vec<u8> {
    let at = bytes
        .windows(4)
        .position(|w| w == fourcc)
        .unwrap_or_else(|| panic!("no {fourcc:?} box"));
    let field = at + 4 + 4 + skip;
    let mut out = bytes.to_vec();
    out[field..field + 4].copy_from_slice(&value.to_be_bytes());
    out
}

async fn pixel_and_sample_bombs_are_refused_naming_the_limit(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Bombs").await;
    connect(&app, &org, "pinterest", "pin-1").await;
    connect(&app, &org, "youtube", "UC-1").await;
    let board = [("platforms", r#"["pinterest"]"#), ("pinterestBoardId", "b")];

    // A PNG whose header declares 100000×100000 (its IHDR follows the 8-byte signature and
    // the chunk's length and type).
    let mut png = image("png", 32, 32);
    png[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    png[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &board,
        Some(("bomb.png", &png)),
    )
    .await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["file"]);
    assert!(
        message(&reply).contains("100000\u{d7}100000"),
        "{}",
        reply.body
    );
    assert!(message(&reply).contains("178,956,970"), "{}", reply.body);

    // A JPEG whose frame header declares 65535×65535.
    let jpeg = image("jpg", 32, 32);
    let sof = jpeg
        .windows(2)
        .position(|w| w[0] == 0xFF && matches!(w[1], 0xC0..=0xC2))
        .expect("a frame header");
    let mut bomb = jpeg.clone();
    bomb[sof + 5..sof + 7].copy_from_slice(&65_535u16.to_be_bytes());
    bomb[sof + 7..sof + 9].copy_from_slice(&65_535u16.to_be_bytes());
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &board,
        Some(("bomb.jpg", &bomb)),
    )
    .await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["file"]);
    assert!(
        message(&reply).contains("65535\u{d7}65535"),
        "{}",
        reply.body
    );

    // An MP4 whose sample size box claims 4,294,967,295 samples (after its version and
    // flags, and the uniform sample size).
    let clip = video("mp4", 160, 120, 1, false, 0);
    let bomb = patched(&clip, b"stsz", 4, u32::MAX);
    let youtube = [("platforms", r#"["youtube"]"#)];
    let reply = upload(
        &app,
        &org.live,
        "/media/videos",
        &youtube,
        Some(("bomb.mp4", &bomb)),
    )
    .await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["file"]);
    assert!(
        message(&reply).contains("4,294,967,295 samples"),
        "{}",
        reply.body
    );
    assert!(stored_files(&root).is_empty());

    // The files as made are taken.
    let reply = upload(
        &app,
        &org.live,
        "/media/videos",
        &youtube,
        Some(("clip.mp4", &clip)),
    )
    .await;
    ok(&reply, 201);
    let _ = std::fs::remove_dir_all(root);
}

async fn the_sweep_deletes_the_blobs_nothing_names(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Sweep").await;
    connect(&app, &org, "pinterest", "pin-1").await;
    let png = image("png", 32, 32);
    let board = [("platforms", r#"["pinterest"]"#), ("pinterestBoardId", "b")];
    let reply = upload(
        &app,
        &org.live,
        "/media/images",
        &board,
        Some(("a.png", &png)),
    )
    .await;
    ok(&reply, 201);
    // A resumable upload with one chunk received.
    let created = app
        .send(
            Request::builder()
                .method(Method::POST)
                .uri("/media/uploads")
                .header("x-api-key", &org.live)
                .header("tus-resumable", "1.0.0")
                .header("upload-length", "10")
                .header("content-type", "application/offset+octet-stream")
                .body(Full::new(Bytes::from_static(b"12345")))
                .expect("a request"),
        )
        .await;
    assert_eq!(created.status.as_u16(), 201);
    // What a crash between writing a blob and recording it leaves: under both prefixes.
    let orphans = [
        root.join("media").join(&org.id).join("0190orphan.png"),
        root.join("uploads")
            .join(&org.id)
            .join("upl_gone")
            .join("0190chunk"),
    ];
    for orphan in &orphans {
        std::fs::create_dir_all(orphan.parent().unwrap()).unwrap();
        std::fs::write(orphan, b"orphan").unwrap();
    }
    // Everything is two hours old, past the sweep's grace.
    let files = stored_files(&root);
    assert_eq!(files.len(), 4, "{files:?}");
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for file in &files {
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
    }
    let report = app
        .xf
        .sweep_blobs(std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!((report.checked, report.orphans), (4, 2), "{report:?}");
    let left = stored_files(&root);
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(orphans.iter().all(|orphan| !orphan.exists()));
    // The item's file and the upload's chunk are whole.
    let listed = get(&app, &org.live, "/media/images").await;
    assert_eq!(ok(&listed, 200)["pagination"]["total"], 1);
    // A fresh orphan is left for a later sweep (it may be a blob being recorded).
    let fresh = root.join("media").join(&org.id).join("0190fresh.png");
    std::fs::write(&fresh, b"new").unwrap();
    let report = app
        .xf
        .sweep_blobs(std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(report.orphans, 0);
    assert!(fresh.exists());
    let _ = std::fs::remove_dir_all(root);
}

async fn platform_settings_and_accounts_are_checked(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Studio").await;
    let clip = grainy_video("mp4", 160, 120, 4);
    let png = image("png", 16, 16);
    let send = |fields: Vec<(&'static str, &'static str)>| {
        let (app, key, clip) = (&app, org.live.clone(), clip.clone());
        async move { upload(app, &key, "/media/videos", &fields, Some(("c.mp4", &clip))).await }
    };
    // No channel connected, then several without naming one, then one not connected.
    let reply = send(vec![("platforms", r#"["linkedin"]"#)]).await;
    assert_eq!(
        refused(&reply, 400, "validation_error"),
        ["linkedin.accounts"]
    );
    connect(&app, &org, "linkedin", "urn:li:person:1").await;
    connect(&app, &org, "linkedin", "urn:li:organization:2").await;
    let reply = send(vec![("platforms", r#"["linkedin"]"#)]).await;
    assert_eq!(
        refused(&reply, 400, "validation_error"),
        ["linkedin.accounts"]
    );
    let reply = send(vec![
        ("platforms", r#"["linkedin"]"#),
        ("linkedin", r#"{"accounts": ["urn:li:person:9"]}"#),
    ])
    .await;
    assert_eq!(
        refused(&reply, 400, "validation_error"),
        ["linkedin.accounts"]
    );
    let reply = send(vec![
        ("platforms", r#"["linkedin"]"#),
        (
            "linkedin",
            r#"{"accounts": ["urn:li:organization:2"], "comment": "Hello"}"#,
        ),
    ])
    .await;
    ok(&reply, 201);
    // Unknown nested settings and types; settings of a platform not chosen are checked too.
    let reply = send(vec![
        ("platforms", r#"["linkedin"]"#),
        (
            "linkedin",
            r#"{"accounts": ["urn:li:person:1"], "colour": "red", "autoPublish": "yes"}"#,
        ),
        ("tiktokDisableDuet", "maybe"),
        ("pinterest", "not json"),
    ])
    .await;
    let mut fields = refused(&reply, 400, "validation_error");
    fields.sort();
    assert_eq!(
        fields,
        [
            "linkedin.autoPublish",
            "linkedin.colour",
            "pinterest",
            "tiktokDisableDuet"
        ]
    );
    // Images take no YouTube, neither as a platform nor in settings.
    for fields in [
        vec![("platforms", r#"["youtube"]"#)],
        vec![("youtube", r#"{"privacy": "public"}"#)],
    ] {
        let reply = upload(
            &app,
            &org.live,
            "/media/images",
            &fields,
            Some(("p.png", &png)),
        )
        .await;
        let named = refused(&reply, 400, "validation_error");
        assert!(named == ["platforms"] || named == ["youtube"], "{named:?}");
    }
    assert_eq!(
        stored_files(&root).len(),
        1,
        "only the accepted upload is kept"
    );
    let _ = std::fs::remove_dir_all(root);
}

pub(crate) async fn lists_page_and_filter_newest_first(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Studio").await;
    connect(&app, &org, "tiktok", "tt").await;
    connect(&app, &org, "pinterest", "pin").await;
    let clip = video("mp4", 640, 360, 4, false, 0);
    let mut ids = Vec::new();
    for n in 0..12 {
        app.clock.advance(chrono::Duration::seconds(1));
        let platforms = if n % 3 == 0 {
            r#"["pinterest"]"#
        } else {
            r#"["tiktok"]"#
        };
        let draft = if n == 5 { "true" } else { "false" };
        let reply = upload(
            &app,
            &org.live,
            "/media/videos",
            &[
                ("platforms", platforms),
                ("isDraft", draft),
                ("pinterestBoardId", "board-1"),
            ],
            Some(("c.mp4", &clip)),
        )
        .await;
        ids.push(ok(&reply, 201)[0]["id"].as_str().unwrap().to_owned());
    }
    ids.reverse();
    let first = get(&app, &org.live, "/media/videos").await;
    let first = ok(&first, 200);
    assert_eq!(
        first["pagination"],
        json!({"total": 12, "page": 1, "limit": 10, "pages": 2})
    );
    let shown: Vec<&str> = first["videos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        shown,
        ids[..10].iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(first["videos"][0]["file"]["container"], "mp4");
    let second = get(&app, &org.live, "/media/videos?page=2&limit=10").await;
    assert_eq!(ok(&second, 200)["videos"].as_array().unwrap().len(), 2);
    let beyond = get(&app, &org.live, "/media/videos?page=9").await;
    assert_eq!(ok(&beyond, 200)["videos"], json!([]));
    let pins = get(
        &app,
        &org.live,
        "/media/videos?platform=pinterest&limit=100",
    )
    .await;
    assert_eq!(ok(&pins, 200)["pagination"]["total"], 4);
    let drafts = get(&app, &org.live, "/media/videos?status=draft").await;
    assert_eq!(ok(&drafts, 200)["pagination"]["total"], 1);
    let images = get(&app, &org.live, "/media/images").await;
    assert_eq!(
        ok(&images, 200),
        &json!({"images": [], "pagination": {"total": 0, "page": 1, "limit": 10, "pages": 0}})
    );
    // Digits only, as the document's integers: no sign, no spaces, no leading zero.
    for bad in [
        "page=0",
        "page=x",
        "page=%2B1",
        "page=%201",
        "limit=05",
        "limit=0",
        "limit=101",
        "status=published",
        "platform=myspace",
    ] {
        let reply = get(&app, &org.live, &format!("/media/videos?{bad}")).await;
        refused(&reply, 400, "validation_error");
    }
    let reply = get(&app, &org.live, "/media/images?platform=youtube").await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["platform"]);
    let _ = std::fs::remove_dir_all(root);
}

pub(crate) async fn keys_plans_envelopes_and_tenants(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Studio").await;
    let other = media_org(&app, "Rival").await;
    connect(&app, &org, "youtube", "UC-a").await;
    let youtube = connect(&app, &org, "youtube", "UC-b").await;
    assert!(youtube["id"].as_str().unwrap().starts_with("ch_"));
    assert!(!youtube.to_string().contains("token-of"));
    // Connecting again keeps the channel.
    let again = connect(&app, &org, "youtube", "UC-b").await;
    assert_eq!(again["id"], youtube["id"]);
    connect(&app, &org, "linkedin", "urn:li:person:1").await;
    connect(&app, &org, "instagram", "ig").await;

    let channels = get(&app, &org.live, "/channels").await;
    let channels = ok(&channels, 200);
    assert_eq!(channels["youtube"].as_array().unwrap().len(), 2);
    assert_eq!(
        channels["youtube"][1],
        json!({"id": youtube["id"], "channelId": "UC-b", "title": "UC-b name", "thumbnail": "https://cdn.example/a.png"})
    );
    assert_eq!(channels["linkedin"][0]["name"], "urn:li:person:1 name");
    assert_eq!(channels["instagram"][0]["username"], "ig name");
    assert_eq!(channels["tiktok"], json!([]));
    // Bearer works as well as X-API-Key.
    let bearer = app.get("/channels", &org.live).await;
    assert_eq!(bearer.body["success"], true);
    let theirs = get(&app, &other.live, "/channels").await;
    assert_eq!(ok(&theirs, 200)["youtube"], json!([]));

    let clip = video("mp4", 160, 120, 1, false, 0);
    let reply = upload(
        &app,
        &org.live,
        "/media/videos",
        &[
            ("platforms", r#"["youtube"]"#),
            ("selectedYoutubeChannels", "UC-a"),
        ],
        Some(("c.mp4", &clip)),
    )
    .await;
    let id = ok(&reply, 201)[0]["id"].as_str().unwrap().to_owned();
    refused(
        &get(&app, &other.live, &format!("/media/videos/{id}")).await,
        404,
        "not_found",
    );
    let unknown = get(&app, &org.live, "/media/videos/med_unknown").await;
    refused(&unknown, 404, "not_found");
    // Counted before the handler looked: its answer carries the remaining-request headers; a
    // request without a key is refused before the count, and its answer carries none.
    let remaining = "x-developer-api-ratelimit-read-remaining";
    assert!(unknown.header(remaining).is_some());
    let keyless = app
        .send(
            Request::builder()
                .uri("/media/videos/med_unknown")
                .body(Full::new(Bytes::new()))
                .expect("a request"),
        )
        .await;
    refused(&keyless, 401, "api_key_invalid");
    assert_eq!(keyless.header(remaining), None);
    assert_eq!(
        ok(&get(&app, &other.live, "/media/videos").await, 200)["pagination"]["total"],
        0
    );

    // Test keys: checked, answered, and nothing kept.
    let mock = upload(
        &app,
        &org.test,
        "/media/videos",
        &[
            ("platforms", r#"["youtube"]"#),
            ("selectedYoutubeChannels", "UC-a"),
        ],
        Some(("c.mp4", &clip)),
    )
    .await;
    let mock = ok(&mock, 201)[0].clone();
    assert_eq!(mock["status"], "pending");
    refused(
        &get(
            &app,
            &org.live,
            &format!("/media/videos/{}", mock["id"].as_str().unwrap()),
        )
        .await,
        404,
        "not_found",
    );
    assert_eq!(
        ok(&get(&app, &org.live, "/media/videos").await, 200)["pagination"]["total"],
        1
    );
    assert_eq!(stored_files(&root).len(), 1);
    // The month's media meters count the live upload, not the test key's mock, and are the
    // organization's own.
    let usage = ok(&get(&app, &org.live, "/media/usage").await, 200).clone();
    assert_eq!(
        usage,
        json!({"period": app.xf.now().month_key(), "plan": "plus", "uploads": 1,
               "bytes": clip.len(), "postsPublished": 0, "postsDeleted": 0})
    );
    let theirs = ok(&get(&app, &other.live, "/media/usage").await, 200).clone();
    assert_eq!(
        (&theirs["uploads"], &theirs["bytes"]),
        (&json!(0), &json!(0))
    );

    // Keys and plans.
    refused(
        &get(&app, "xf_live_nope", "/media/videos").await,
        401,
        "api_key_invalid",
    );
    let anonymous = app
        .send(xf_tests::request(Method::GET, "/channels", None, None, &[]))
        .await;
    refused(&anonymous, 401, "api_key_invalid");
    let seo_only = app.organization("SEO shop", "growth").await;
    for path in ["/media/videos", "/media/usage"] {
        refused(
            &get(&app, &seo_only.live_key, path).await,
            403,
            "plan_required",
        );
        refused(
            &get(&app, "xf_live_nope", path).await,
            401,
            "api_key_invalid",
        );
    }
    // The admin API checks what it is given.
    for bad in [
        json!({"platform": "myspace", "accountId": "a", "displayName": "A", "accessToken": "t"}),
        json!({"platform": "tiktok", "displayName": "A", "accessToken": "t"}),
        json!({"platform": "tiktok", "accountId": "a", "accessToken": "t"}),
        json!({"platform": "tiktok", "accountId": "a", "displayName": "A", "accessToken": ""}),
        json!({"platform": "tiktok", "accountId": "a", "displayName": "A", "accessToken": "t", "thumbnail": "ftp://x"}),
        json!({"platform": "tiktok", "accountId": "a", "displayName": "A", "accessToken": "t", "expiresAt": "soon"}),
    ] {
        app.admin(
            Method::POST,
            &format!("/organizations/{}/channels", org.id),
            Some(bad),
        )
        .await
        .expect_error(400, "validation_error");
    }
    app.admin(
        Method::POST,
        "/organizations/org_unknown/channels",
        Some(
            json!({"platform": "tiktok", "accountId": "a", "displayName": "A", "accessToken": "t"}),
        ),
    )
    .await
    .expect_error(404, "not_found");
    let _ = std::fs::remove_dir_all(root);
}

/// Sends an upload form with `X-API-Key` and `Idempotency-Key`.
async fn upload_once(
    app: &TestApp,
    key: &str,
    idempotency_key: &str,
    fields: &[(&str, &str)],
    file: &[u8],
) -> Reply {
    app.send(keyed_upload(
        "/media/videos",
        key,
        idempotency_key,
        fields,
        file,
    ))
    .await
}

/// A video upload to `path` under `Idempotency-Key: idempotency_key`.
fn keyed_upload(
    path: &str,
    key: &str,
    idempotency_key: &str,
    fields: &[(&str, &str)],
    file: &[u8],
) -> Request<Full<Bytes>> {
    let (content_type, body) = multipart(fields, Some(("clip.mp4", file)));
    Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("x-api-key", key)
        .header("idempotency-key", idempotency_key)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("a request")
}

async fn uploads_with_an_idempotency_key_happen_once(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Studio").await;
    connect(&app, &org, "tiktok", "tt").await;
    let clip = video("mp4", 640, 360, 3, false, 0);
    let fields = [("platforms", r#"["tiktok"]"#), ("title", "Once")];

    let first = upload_once(&app, &org.live, "launch-1", &fields, &clip).await;
    let id = ok(&first, 201)[0]["id"].clone();
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = upload_once(&app, &org.live, "launch-1", &fields, &clip).await;
    assert_eq!(ok(&again, 201)[0]["id"], id);
    assert_eq!(again.body["message"], "video uploaded");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_ne!(
        again.body["meta"]["requestId"],
        first.body["meta"]["requestId"]
    );
    // At the API's base URL, through `Mounts` (whose routes carry `/api/v1`): the same
    // request, replayed.
    let mounted = app
        .send_mounted(keyed_upload(
            "/api/v1/media/videos",
            &org.live,
            "launch-1",
            &fields,
            &clip,
        ))
        .await;
    assert_eq!(ok(&mounted, 201)[0]["id"], id);
    assert_eq!(mounted.header("idempotent-replayed"), Some("true"));
    // One item, one file: the second and third copies of the bytes were dropped.
    assert_eq!(
        ok(&get(&app, &org.live, "/media/videos").await, 200)["pagination"]["total"],
        1
    );
    assert_eq!(stored_files(&root).len(), 1);

    // The same key with another form (other fields, or other bytes) is refused.
    let other_fields = upload_once(
        &app,
        &org.live,
        "launch-1",
        &[("platforms", r#"["tiktok"]"#)],
        &clip,
    )
    .await;
    refused(&other_fields, 422, "idempotency_key_reused");
    let other_clip = video("mp4", 640, 360, 4, false, 0);
    let other_bytes = upload_once(&app, &org.live, "launch-1", &fields, &other_clip).await;
    refused(&other_bytes, 422, "idempotency_key_reused");
    // A refused form is not kept: corrected, the same key goes through.
    let bad = upload_once(
        &app,
        &org.live,
        "launch-2",
        &[("platforms", "tiktok")],
        &clip,
    )
    .await;
    refused(&bad, 400, "validation_error");
    let fixed = upload_once(&app, &org.live, "launch-2", &fields, &clip).await;
    assert_ne!(ok(&fixed, 201)[0]["id"], id);
    for key in ["", &"k".repeat(129)] {
        let reply = upload_once(&app, &org.live, key, &fields, &clip).await;
        assert_eq!(
            refused(&reply, 400, "validation_error"),
            ["Idempotency-Key"]
        );
    }
    assert_eq!(stored_files(&root).len(), 2);
    let _ = std::fs::remove_dir_all(root);
}

/// Sends an upload form with several file parts (part name, file name, bytes) and, if given,
/// an `Idempotency-Key`.
pub(crate) async fn upload_files(
    app: &TestApp,
    key: &str,
    path: &str,
    fields: &[(&str, &str)],
    files: &[(&str, &str, &[u8])],
    idempotency_key: Option<&str>,
) -> Reply {
    let (content_type, body) = xf_tests::media::multipart_parts(fields, files);
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("x-api-key", key)
        .header("content-type", content_type);
    if let Some(idempotency_key) = idempotency_key {
        request = request.header("idempotency-key", idempotency_key);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .expect("a request");
    app.send(request).await
}

/// A refused carousel: what it is, its fields, its files, the field the refusal names and
/// what its message says.
type CarouselCase<'a> = (
    &'a str,
    Vec<(&'a str, &'a str)>,
    Vec<(&'a str, &'a str, &'a [u8])>,
    &'a str,
    &'a str,
);

/// An image form with several `file` parts is one item, a carousel: its images kept in order
/// (`file` the first, `carousel` all of them), each held to every chosen platform's rules for
/// an image and their number to the platform's carousel sizes; a refusal names the image and
/// leaves nothing stored, and deleting the item deletes every image.
pub(crate) async fn a_carousel_is_stored_in_order_and_checked_per_platform(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Carousels").await;
    for (platform, account) in [
        ("instagram", "ig-1"),
        ("linkedin", "urn:li:person:1"),
        ("pinterest", "pin-1"),
        ("tiktok", "tt-1"),
    ] {
        connect(&app, &org, platform, account).await;
    }
    let jpegs = carousel_jpegs();
    let all = [
        (
            "platforms",
            r#"["instagram","linkedin","pinterest","tiktok"]"#,
        ),
        ("pinterestBoardId", "board-1"),
    ];
    let three: Vec<(&str, &str, &[u8])> = ["a.jpg", "b.jpg", "c.jpg"]
        .iter()
        .zip(&jpegs)
        .map(|(name, bytes)| ("file", *name, bytes.as_slice()))
        .collect();
    let reply = upload_files(&app, &org.live, "/media/images", &all, &three, Some("k-1")).await;
    let created = ok(&reply, 201);
    assert_eq!(created.as_array().map(Vec::len), Some(1), "one item");
    let id = created[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(stored_files(&root).len(), 3);
    let item = ok(
        &get(&app, &org.live, &format!("/media/images/{id}")).await,
        200,
    )
    .clone();
    assert_eq!(item["file"]["name"], "a.jpg");
    let carousel = item["carousel"].as_array().expect("a carousel");
    let names: Vec<&str> = carousel.iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(names, ["a.jpg", "b.jpg", "c.jpg"]);
    assert_eq!(carousel[1]["height"], 1350);
    assert_eq!(carousel[2]["size"], jpegs[2].len());
    for platform in ["instagram", "linkedin", "pinterest", "tiktok"] {
        assert_eq!(item[platform]["status"], "pending", "{platform}: one post");
        assert_eq!(item[platform]["posts"].as_array().map(Vec::len), Some(1));
    }
    // A single image has no carousel in its view.
    let one = upload(
        &app,
        &org.live,
        "/media/images",
        &[],
        Some(("one.jpg", &jpegs[0])),
    )
    .await;
    let one = ok(&one, 201)[0]["id"].as_str().unwrap().to_owned();
    let shown = ok(
        &get(&app, &org.live, &format!("/media/images/{one}")).await,
        200,
    )
    .clone();
    assert!(shown.get("carousel").is_none(), "{shown}");

    // The same form again replays; the images in another order are another form.
    let again = upload_files(&app, &org.live, "/media/images", &all, &three, Some("k-1")).await;
    assert_eq!(ok(&again, 201)[0]["id"], id.as_str());
    let mut swapped = three.clone();
    swapped.swap(0, 1);
    let other = upload_files(
        &app,
        &org.live,
        "/media/images",
        &all,
        &swapped,
        Some("k-1"),
    )
    .await;
    refused(&other, 422, "idempotency_key_reused");
    assert_eq!(stored_files(&root).len(), 4, "the replays' copies are gone");

    // Refusals, each naming the platform or the image, each leaving nothing.
    let png = image("png", 1080, 1080);
    let six: Vec<(&str, &str, &[u8])> = (0..6)
        .map(|_| ("file", "x.jpg", jpegs[0].as_slice()))
        .collect();
    let with_png = [three[0], ("file", "b.png", png.as_slice()), three[2]];
    let garbage = [
        three[0],
        three[1],
        ("file", "c.jpg", b"not a jpeg".as_slice()),
    ];
    let cases: Vec<CarouselCase> = vec![
        (
            "six images on Pinterest",
            vec![("platforms", r#"["pinterest"]"#), ("pinterestBoardId", "b")],
            six.clone(),
            "pinterest",
            "carousels of 2 to 5 images; this one has 6",
        ),
        (
            "a PNG in an Instagram carousel",
            vec![("platforms", r#"["instagram"]"#)],
            with_png.to_vec(),
            "instagram",
            "JPEG images only (image 2 of the carousel, \"b.png\")",
        ),
        (
            "an image that is none",
            vec![],
            garbage.to_vec(),
            "file",
            "image 3 of the carousel (\"c.jpg\")",
        ),
    ];
    for (what, fields, files, field, needle) in cases {
        let reply = upload_files(&app, &org.live, "/media/images", &fields, &files, None).await;
        assert_eq!(refused(&reply, 400, "validation_error"), [field], "{what}");
        assert!(
            message(&reply).contains(needle) || reply.body.to_string().contains(needle),
            "{what}: {}",
            reply.body
        );
        assert_eq!(stored_files(&root).len(), 4, "{what} left a file");
    }
    // Six images suit TikTok (up to 35) and no more than the form's 35 are read.
    let many: Vec<(&str, &str, &[u8])> = (0..36)
        .map(|_| ("file", "x.jpg", jpegs[0].as_slice()))
        .collect();
    let reply = upload_files(&app, &org.live, "/media/images", &[], &many, None).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["file"]);
    assert!(
        message(&reply).contains("at most 35 images"),
        "{}",
        reply.body
    );
    assert_eq!(stored_files(&root).len(), 4);
    let tiktok = [("platforms", r#"["tiktok"]"#)];
    let reply = upload_files(&app, &org.live, "/media/images", &tiktok, &six, None).await;
    ok(&reply, 201);
    assert_eq!(stored_files(&root).len(), 10);
    // A video takes one file.
    let clip = video("mp4", 160, 120, 1, true, 0);
    let two = [
        ("file", "a.mp4", clip.as_slice()),
        ("file", "b.mp4", clip.as_slice()),
    ];
    let reply = upload_files(&app, &org.live, "/media/videos", &[], &two, None).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["file"]);
    assert!(message(&reply).contains("more than once"), "{}", reply.body);
    assert_eq!(stored_files(&root).len(), 10);

    // Deleting the carousel deletes its three images.
    let path = format!("/media/images/{id}");
    let request = Request::builder()
        .method(Method::DELETE)
        .uri(&path)
        .header("x-api-key", &org.live)
        .body(Full::new(Bytes::new()))
        .expect("a request");
    ok(&app.send(request).await, 200);
    assert_eq!(stored_files(&root).len(), 7);
    let _ = std::fs::remove_dir_all(root);
}

/// A blob store that, as the second blob of a form is started, deletes the first: what the
/// blob sweep does to a file kept unrecorded for over an hour while its form still streams.
#[derive(Debug)]
struct SweptMidForm {
    inner: LocalBlobStore,
    created: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl xf_core::media::blob::BlobStore for SweptMidForm {
    async fn create(
        &self,
        key: &str,
    ) -> std::io::Result<Box<dyn xf_core::media::blob::BlobWriter>> {
        let first = {
            let mut created = self.created.lock().unwrap();
            created.push(key.to_owned());
            (created.len() == 2).then(|| created[0].clone())
        };
        if let Some(first) = first {
            self.inner.delete(&first).await?;
        }
        self.inner.create(key).await
    }

    async fn open(
        &self,
        key: &str,
    ) -> std::io::Result<Box<dyn xf_core::media::inspect::RangeRead>> {
        self.inner.open(key).await
    }

    async fn delete(&self, key: &str) -> std::io::Result<()> {
        self.inner.delete(key).await
    }

    async fn list(&self, folder: &str) -> std::io::Result<xf_core::media::blob::BlobListing> {
        self.inner.list(folder).await
    }
}

/// A form whose first file was removed before the form ended (the blob sweep takes a file
/// unrecorded for an hour for a leftover) is refused as the client's `400` naming the file,
/// not a server error, and leaves nothing.
async fn a_file_removed_before_its_form_ended_is_the_clients_400(app: TestApp) {
    let root = std::env::temp_dir().join(format!("xf-media-swept-{}", uuid_like()));
    let blobs = SweptMidForm {
        inner: LocalBlobStore::new(&root).expect("a blob directory"),
        created: std::sync::Mutex::new(Vec::new()),
    };
    let app = app.reconfigured(|builder| builder.blob_store(std::sync::Arc::new(blobs)));
    let org = media_org(&app, "Slow forms").await;
    let jpeg = image("jpg", 640, 480);
    let files = [
        ("file", "first.jpg", jpeg.as_slice()),
        ("file", "second.jpg", jpeg.as_slice()),
    ];
    let reply = upload_files(&app, &org.live, "/media/images", &[], &files, None).await;
    assert_eq!(refused(&reply, 400, "validation_error"), ["file"]);
    assert!(
        message(&reply).contains("\"first.jpg\" was removed before the form ended"),
        "{}",
        reply.body
    );
    assert!(stored_files(&root).is_empty());
    let list = get(&app, &org.live, "/media/images").await;
    assert_eq!(ok(&list, 200)["pagination"]["total"], 0);
    let _ = std::fs::remove_dir_all(root);
}

/// A NUL in any nested setting (on upload and on `PATCH`) is a 400 naming it, as in a flat
/// field; so is a key given twice in a nested settings object, which would otherwise leave
/// the last one to win. Nothing is stored; the drafts stay as they were.
async fn nul_and_twice_given_keys_in_settings_are_named(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Studio").await;
    for platform in ["youtube", "instagram", "tiktok", "linkedin", "pinterest"] {
        connect(&app, &org, platform, &format!("{platform}-account")).await;
    }
    let clip = grainy_video("mp4", 160, 120, 4);
    let all = r#"["youtube","instagram","tiktok","linkedin","pinterest"]"#;
    let cases = [
        ("youtube", r#"{"title":"a\u0000b"}"#, "youtube.title"),
        (
            "youtube",
            r#"{"description":"\u0000"}"#,
            "youtube.description",
        ),
        ("instagram", r#"{"caption":"a\u0000"}"#, "instagram.caption"),
        (
            "instagram",
            r#"{"firstComment":"\u0000b"}"#,
            "instagram.firstComment",
        ),
        ("tiktok", r#"{"caption":"a\u0000b"}"#, "tiktok.caption"),
        ("linkedin", r#"{"comment":"a\u0000b"}"#, "linkedin.comment"),
        ("pinterest", r#"{"title":"a\u0000b"}"#, "pinterest.title"),
        (
            "tiktok",
            r#"{"caption":"one","caption":"two"}"#,
            "tiktok.caption",
        ),
        (
            "youtube",
            r#"{"privacy":"public","privacy":"private"}"#,
            "youtube.privacy",
        ),
        (
            "tiktok",
            r#"{"ca\u0000ption":"x"}"#,
            "tiktok.ca\u{FFFD}ption",
        ),
    ];
    for (platform, settings, field) in cases {
        let fields = [
            ("platforms", all),
            ("isDraft", "true"),
            (platform, settings),
        ];
        let reply = upload(
            &app,
            &org.live,
            "/media/videos",
            &fields,
            Some(("c.mp4", &clip)),
        )
        .await;
        assert_eq!(
            refused(&reply, 400, "validation_error"),
            [field],
            "{platform}={settings}"
        );
    }
    assert!(stored_files(&root).is_empty(), "nothing refused is kept");

    let clip = grainy_video("mp4", 640, 360, 4);
    let fields = [("platforms", r#"["tiktok"]"#), ("isDraft", "true")];
    let reply = upload(
        &app,
        &org.live,
        "/media/videos",
        &fields,
        Some(("c.mp4", &clip)),
    )
    .await;
    let id = ok(&reply, 201)[0]["id"].as_str().expect("an id").to_owned();
    let path = format!("/media/videos/{id}");
    let before = get(&app, &org.live, &path).await.body["data"].clone();
    for (body, field) in [
        (r#"{"tiktok":{"caption":"a\u0000b"}}"#, "tiktok.caption"),
        (r#"{"title":"a\u0000b"}"#, "title"),
        (
            r#"{"tiktok":{"caption":"one","caption":"two"}}"#,
            "tiktok.caption",
        ),
        (r#"{"title":"one","title":"two"}"#, "title"),
    ] {
        let request = xf_tests::request(
            Method::PATCH,
            &path,
            Some(&org.live),
            Some(body.to_owned()),
            &[("content-type", "application/json")],
        );
        let reply = app.send(request).await;
        assert_eq!(refused(&reply, 400, "validation_error"), [field], "{body}");
    }
    let after = get(&app, &org.live, &path).await.body["data"].clone();
    assert_eq!(after, before, "a refused change changes nothing");
    let _ = std::fs::remove_dir_all(root);
}

/// An image uploaded without `platforms` has nothing to publish: it is `completed` in the
/// upload's answer and from then on (scheduled or not), unless it is a draft, which stays one.
pub(crate) async fn an_image_without_platforms_is_settled_at_once(app: TestApp) {
    let (app, root) = with_blobs(app, 50 << 20);
    let org = media_org(&app, "Library").await;
    let png = image("png", 16, 16);
    let mut ids = Vec::new();
    for (fields, status) in [
        (vec![], "completed"),
        (vec![("scheduledAt", "2030-01-01T00:00:00Z")], "completed"),
        (vec![("isDraft", "true")], "draft"),
    ] {
        let reply = upload(
            &app,
            &org.live,
            "/media/images",
            &fields,
            Some(("a.png", &png)),
        )
        .await;
        let created = &ok(&reply, 201)[0];
        assert_eq!(created["status"], status, "{fields:?}");
        assert_eq!(created["platforms"], json!([]));
        let id = created["id"].as_str().unwrap().to_owned();
        let item = get(&app, &org.live, &format!("/media/images/{id}")).await;
        assert_eq!(ok(&item, 200)["status"], status);
        assert_eq!(ok(&item, 200)["pinterest"]["status"], "idle");
        ids.push(id);
    }
    let completed = get(&app, &org.live, "/media/images?status=completed").await;
    assert_eq!(ok(&completed, 200)["pagination"]["total"], 2);
    let pending = get(&app, &org.live, "/media/images?status=pending").await;
    assert_eq!(ok(&pending, 200)["pagination"]["total"], 0);
    let _ = std::fs::remove_dir_all(root);
}
