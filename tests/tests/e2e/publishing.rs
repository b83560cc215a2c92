//! Publishing for real, against local stand-ins of YouTube's and Instagram's endpoints that
//! check what the clients send: every stage read through `GET /media/videos/{id}`, chunked
//! and resumed uploads, a lost or crashed finalize that publishes once, tokens refreshed and
//! revoked, rate limits, refusals that fail one platform only, the signed media URL
//! Instagram pulls, and a scheduled post published once by two instances.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use serde_json::{json, Value};
use xf_core::media::platforms::instagram::Instagram;
use xf_core::media::platforms::linkedin::Linkedin;
use xf_core::media::platforms::pinterest::Pinterest;
use xf_core::media::platforms::tiktok::Tiktok;
use xf_core::media::platforms::youtube::{Youtube, CHUNK_UNIT};
use xf_core::media::publish::MEDIA_PUBLISH;
use xf_core::runtime::{WorkerHandle, WorkerOptions};
use xf_tests::media::{carousel_jpegs, grainy_video, image, video};
use xf_tests::platforms::{Failure, PlatformStandIn, Route};
use xf_tests::TestApp;

use crate::media::{upload, upload_files};

crate::backends!(
    youtube_publishes_in_chunks_and_reports_each_stage,
    an_interrupted_upload_resumes_where_it_stopped,
    a_lost_finalize_is_looked_up_not_sent_again,
    a_crash_between_start_and_finalize_publishes_once,
    tokens_are_refreshed_and_a_revoked_grant_disconnects,
    a_rate_limit_waits_for_its_reset,
    a_refusal_fails_that_platform_only,
    instagram_pulls_the_signed_url_and_publishes,
    tiktok_posts_in_chunks_sends_inbox_uploads_and_pulls_photos,
    tiktok_refuses_what_the_creator_may_not_post_before_uploading,
    linkedin_uploads_parts_as_instructed_then_posts,
    pinterest_pins_videos_and_images_once,
    a_refresh_that_lost_the_race_to_a_rotation_uses_the_new_token,
    a_worker_dying_on_the_last_attempt_fails_the_post,
    media_events_reach_the_webhooks_that_subscribe,
    a_cancelled_schedule_never_publishes,
    a_cancel_during_a_running_upload_leaves_nothing_published,
    a_post_past_its_irreversible_call_refuses_a_cancel,
    a_rescheduled_item_publishes_at_the_new_time_not_the_old,
    deleting_an_item_stops_its_posts_and_removes_its_file,
    a_published_post_is_deleted_from_its_platform_once,
    a_deletion_the_platform_refuses_leaves_the_post_published,
    posts_that_cannot_be_deleted_are_refused_with_the_reason,
    covers_reach_each_platform_in_its_documented_shape,
    first_comments_are_posted_once_and_never_fail_the_post,
    a_first_comment_cut_off_by_a_crash_is_not_sent_again,
    a_custom_thumbnail_is_set_on_youtube_after_the_video,
    a_carousel_of_three_images_is_one_post_on_each_platform,
    an_interrupted_carousel_goes_on_from_the_image_it_stopped_at,
);

const ACCESS: &str = "ya29.access-of-studio";
const REFRESH: &str = "1//refresh-of-studio";

/// The app with YouTube and Instagram pointed at a fresh stand-in, its public base URL served
/// by a real HTTP server of signed media URLs (which the Instagram stand-in fetches).
async fn publishing(app: TestApp) -> (TestApp, PlatformStandIn) {
    publishing_with(app, |builder| builder).await
}

/// [`publishing`], the facade's builder further adjusted by `configure`.
async fn publishing_with(
    app: TestApp,
    configure: impl FnOnce(xf_core::XfBuilder) -> xf_core::XfBuilder,
) -> (TestApp, PlatformStandIn) {
    let platforms = PlatformStandIn::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (youtube, instagram) = (platforms.youtube_config(), platforms.instagram_config());
    let (tiktok, linkedin) = (platforms.tiktok_config(), platforms.linkedin_config());
    let pinterest = platforms.pinterest_config();
    let app = app.reconfigured(|builder| {
        configure(builder)
            .public_base_url(base)
            // Webhook receivers listen on loopback.
            .allow_private_targets(true)
            .publisher(Arc::new(Youtube::new(youtube)))
            .publisher(Arc::new(Instagram::new(instagram)))
            .publisher(Arc::new(Tiktok::new(tiktok)))
            .publisher(Arc::new(Linkedin::new(linkedin)))
            .publisher(Arc::new(Pinterest::new(pinterest)))
    });
    let files = axum::Router::new().nest_service(
        "/m",
        xf_tower::MediaFileService::new(app.xf.clone()).into_router(),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, files).await;
    });
    (app, platforms)
}

/// Workers that claim often and rescue expired leases quickly.
fn workers(app: &TestApp) -> WorkerHandle {
    app.xf.spawn_workers(
        WorkerOptions::new()
            .poll_interval(Duration::from_millis(20))
            .rescue_interval(Duration::from_millis(50))
            .heartbeat_interval(Duration::from_millis(100)),
    )
}

struct Studio {
    id: String,
    key: String,
}

async fn studio(app: &TestApp) -> Studio {
    let created = app.organization("Studio", "plus").await;
    Studio {
        id: created.organization.id.to_string(),
        key: created.live_key,
    }
}

/// The usual scene: the platforms' stand-in granting [`ACCESS`], the Studio organization,
/// and its `channels` connected, each `(platform, account, minutes its token lasts)`.
async fn studio_connected(
    app: TestApp,
    channels: &[(&str, &str, i64)],
) -> (TestApp, PlatformStandIn, Studio) {
    let (app, platforms) = publishing(app).await;
    platforms.grant(ACCESS, None);
    let org = studio(&app).await;
    for (platform, account, minutes) in channels {
        connect(&app, &org, platform, account, *minutes).await;
    }
    (app, platforms, org)
}

/// Connects a channel whose token expires `expires_in_minutes` from the test clock.
async fn connect(
    app: &TestApp,
    org: &Studio,
    platform: &str,
    account: &str,
    expires_in_minutes: i64,
) {
    let expires = app
        .xf
        .now()
        .plus(chrono::Duration::minutes(expires_in_minutes));
    let reply = app
        .admin(
            Method::POST,
            &format!("/organizations/{}/channels", org.id),
            Some(json!({
                "platform": platform, "accountId": account, "displayName": account,
                "accessToken": ACCESS, "refreshToken": REFRESH, "expiresAt": expires,
            })),
        )
        .await;
    reply.expect(201);
}

async fn item(app: &TestApp, key: &str, id: &str) -> Value {
    let reply = app.get(&format!("/media/videos/{id}"), key).await;
    reply.expect(200).clone()
}

/// Reads the item at `path` until `done` holds (10 s at most).
async fn wait_at(app: &TestApp, key: &str, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut shown = Value::Null;
    for _ in 0..500 {
        shown = app.get(path, key).await.expect(200).clone();
        if done(&shown) {
            return shown;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the item never got there: {shown}");
}

/// Reads the video until `done` holds.
async fn wait_for(app: &TestApp, key: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    wait_at(app, key, &format!("/media/videos/{id}"), done).await
}

/// Reads the video until its post on `platform` has an error that contains `needle`.
async fn wait_for_error(app: &TestApp, key: &str, id: &str, platform: &str, needle: &str) -> Value {
    wait_for(app, key, id, |i| {
        i[platform]["error"]
            .as_str()
            .is_some_and(|e| e.contains(needle))
    })
    .await
}

/// Uploads `clip` for `platforms` with `fields`; the item's id.
async fn post_video(app: &TestApp, org: &Studio, clip: &[u8], fields: &[(&str, &str)]) -> String {
    let reply = upload(
        app,
        &org.key,
        "/media/videos",
        fields,
        Some(("launch.mp4", clip)),
    )
    .await;
    reply.expect(201)[0]["id"].as_str().unwrap().to_owned()
}

/// The job of the item's post on `platform`.
/// The job of the item's post on `platform`, once its attempt's outcome is written: the
/// handler stores the post before it returns, and the runtime writes the job after, so a
/// test that saw the post waits here for the job to catch up (10 s at most).
async fn job_of(app: &TestApp, id: &str, platform: &str) -> xf_core::model::JobRecord {
    let item = app
        .store
        .get_media(&xf_core::ids::MediaId::parse(id).unwrap())
        .await
        .unwrap()
        .unwrap();
    let platform = xf_core::media::Platform::parse(platform).unwrap();
    let post = item.targets[&platform].posts.values().next().unwrap();
    let job_id = post.job_id.clone().unwrap();
    for _ in 0..500 {
        let job = app.store.get_job(&job_id).await.unwrap().unwrap();
        if job.status != xf_core::model::JobStatus::Processing {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the job's attempt never ended");
}

/// Seconds from now until the item's job on `platform` runs again, once the runtime has
/// given it back to the queue. A test that saw a post's error waits here before it moves the
/// clock: the runtime dates the retry from the clock when it writes the job, after the
/// handler stored the error, so a clock moved in between would push the retry past it.
async fn retry_of(app: &TestApp, id: &str, platform: &str) -> u64 {
    let job = job_of(app, id, platform).await;
    assert_eq!(job.status, xf_core::model::JobStatus::Pending, "{job:?}");
    app.xf.now().seconds_until(job.run_at)
}

fn sessions(platforms: &PlatformStandIn) -> usize {
    platforms
        .seen()
        .iter()
        .filter(|s| s.method == Method::POST && s.uri.contains("uploadType=resumable"))
        .count()
}

/// The chunk `PUT`s: `(first, last, total)` of each `Content-Range`, `None` for probes.
fn chunk_ranges(platforms: &PlatformStandIn) -> Vec<Option<(u64, u64, u64)>> {
    platforms
        .seen()
        .iter()
        .filter(|s| s.method == Method::PUT)
        .map(|s| {
            let range = s.header("content-range").unwrap();
            let (span, total) = range
                .strip_prefix("bytes ")
                .unwrap()
                .split_once('/')
                .unwrap();
            let total: u64 = total.parse().unwrap();
            (span != "*").then(|| {
                let (a, b) = span.split_once('-').unwrap();
                (a.parse().unwrap(), b.parse().unwrap(), total)
            })
        })
        .collect()
}

pub(crate) async fn youtube_publishes_in_chunks_and_reports_each_stage(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 60)]).await;
    // About 1.5 MB: six chunks of 256 KiB.
    let clip = grainy_video("mp4", 320, 240, 5);
    let size = clip.len() as u64;
    assert!(size > 5 * CHUNK_UNIT, "{size}");
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("title", "Launch"),
            ("platforms", r#"["youtube"]"#),
            (
                "youtube",
                r#"{"title": "Launch day", "privacy": "unlisted", "description": "Hello"}"#,
            ),
        ],
    )
    .await;
    let shown = item(&app, &org.key, &id).await;
    assert_eq!(
        (shown["status"].clone(), shown["youtube"]["status"].clone()),
        (json!("pending"), json!("pending"))
    );

    // Held at the first chunk: processing.
    let held = platforms.hold(Route::YoutubeChunk, false);
    let workers = workers(&app);
    held.arrived().await;
    let shown = item(&app, &org.key, &id).await;
    assert_eq!(shown["status"], "processing");
    assert_eq!(shown["youtube"]["status"], "processing");
    assert_eq!(shown["youtube"]["videoId"], Value::Null);
    held.release();

    let shown = wait_for(&app, &org.key, &id, |i| i["status"] != "processing").await;
    let video = &platforms.videos()[0];
    let video_id = video["id"].as_str().unwrap();
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(shown["youtube"]["status"], "published");
    assert_eq!(shown["youtube"]["videoId"], video_id);
    assert_eq!(
        shown["youtube"]["url"],
        format!("https://www.youtube.com/watch?v={video_id}")
    );
    assert_eq!(shown["youtube"]["posts"][0]["status"], "published");
    assert_eq!(platforms.videos().len(), 1);

    // The session's metadata, and chunks that are multiples of 256 KiB, in order, to the end.
    let session = platforms
        .seen()
        .into_iter()
        .find(|s| s.method == Method::POST && s.uri.contains("uploadType=resumable"))
        .unwrap();
    assert!(
        session.uri.contains("part=snippet,status"),
        "{}",
        session.uri
    );
    assert_eq!(
        session.header("authorization"),
        Some(format!("Bearer {ACCESS}").as_str())
    );
    assert_eq!(
        session.header("x-upload-content-length"),
        Some(size.to_string().as_str())
    );
    assert_eq!(session.header("x-upload-content-type"), Some("video/mp4"));
    let metadata: Value = serde_json::from_str(&session.text).unwrap();
    assert_eq!(metadata["snippet"]["title"], "Launch day");
    assert_eq!(metadata["snippet"]["description"], "Hello");
    assert_eq!(metadata["status"]["privacyStatus"], "unlisted");
    let ranges: Vec<(u64, u64, u64)> = chunk_ranges(&platforms).into_iter().flatten().collect();
    let mut next = 0;
    for (first, last, total) in &ranges {
        assert_eq!((*first, *total), (next, size));
        assert!((last + 1) % CHUNK_UNIT == 0 || last + 1 == size);
        next = last + 1;
    }
    assert_eq!(next, size);
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn an_interrupted_upload_resumes_where_it_stopped(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 60)]).await;
    let clip = grainy_video("mp4", 320, 240, 4);
    let size = clip.len() as u64;
    // The second chunk breaks off with a 503: the attempt ends and is retried.
    let first = platforms.hold(Route::YoutubeChunk, false);
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let workers = workers(&app);
    first.arrived().await;
    platforms.fail_next(
        Route::YoutubeChunk,
        Failure::Answer(
            503,
            json!({"error": {"code": 503, "message": "Backend Error"}}),
            None,
        ),
    );
    first.release();
    let shown = wait_for(&app, &org.key, &id, |i| {
        i["youtube"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("will try again"))
    })
    .await;
    assert_eq!(shown["youtube"]["status"], "processing");
    let job = job_of(&app, &id, "youtube").await;
    assert_eq!(job.status, xf_core::model::JobStatus::Pending);
    app.clock.advance(chrono::Duration::seconds(10));
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    assert_eq!(shown["youtube"]["status"], "published");

    // One session; the retry asked where it stood, and went on from there: no byte twice.
    assert_eq!(sessions(&platforms), 1);
    let ranges = chunk_ranges(&platforms);
    let probe = ranges
        .iter()
        .position(Option::is_none)
        .expect("a status probe");
    let before: Vec<_> = ranges[..probe].iter().flatten().collect();
    let after: Vec<_> = ranges[probe + 1..].iter().flatten().collect();
    // One chunk arrived, the second was refused, then the rest from the second on.
    assert_eq!(before.len(), 2);
    assert_eq!(after[0].0, CHUNK_UNIT);
    assert_eq!(after.last().unwrap().1 + 1, size);
    assert_eq!(platforms.videos().len(), 1);
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn a_lost_finalize_is_looked_up_not_sent_again(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 60)]).await;
    let clip = grainy_video("mp4", 320, 240, 4);
    // The last chunk makes the video, but its answer never comes in time.
    platforms.fail_next(
        Route::YoutubeLastChunk,
        Failure::ActThenStall(Duration::from_secs(5)),
    );
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let workers = workers(&app);
    let shown = wait_for_error(&app, &org.key, &id, "youtube", "not known").await;
    assert_eq!(shown["youtube"]["status"], "processing");
    assert_eq!(platforms.videos().len(), 1, "the video was made");
    let puts_before = chunk_ranges(&platforms).len();
    assert_eq!(retry_of(&app, &id, "youtube").await, 5);
    app.clock.advance(chrono::Duration::seconds(10));
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    let video_id = platforms.videos()[0]["id"].clone();
    assert_eq!(shown["youtube"]["videoId"], video_id);
    // The retry only asked the session (one probe), and sent no bytes.
    let after = &chunk_ranges(&platforms)[puts_before..];
    assert_eq!(after, &[None]);
    assert_eq!(platforms.videos().len(), 1);
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn a_crash_between_start_and_finalize_publishes_once(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 60)]).await;
    let clip = grainy_video("mp4", 320, 240, 4);
    let size = clip.len() as u64;
    // Every chunk but the last is in; the process dies as it sends the last one.
    let last = platforms.hold(Route::YoutubeLastChunk, false);
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let crashed = workers(&app);
    last.arrived().await;
    let post = app
        .store
        .get_media(&xf_core::ids::MediaId::parse(&id).unwrap())
        .await
        .unwrap()
        .unwrap();
    let stage = post
        .targets
        .values()
        .next()
        .unwrap()
        .posts
        .values()
        .next()
        .unwrap()
        .stage;
    assert_eq!(stage, xf_core::media::PostStage::Finalizing);
    drop(crashed);

    // Another process takes the job up once its lease ran out.
    let workers = workers(&app);
    app.clock.advance(chrono::Duration::seconds(31));
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    assert_eq!(shown["youtube"]["status"], "published");
    assert_eq!(platforms.videos().len(), 1);
    assert_eq!(
        sessions(&platforms),
        1,
        "the upload session was resumed, not made again"
    );
    let ranges = chunk_ranges(&platforms);
    let last_sent: Vec<_> = ranges
        .iter()
        .flatten()
        .filter(|(_, b, _)| b + 1 == size)
        .collect();
    assert_eq!(
        last_sent.len(),
        2,
        "the held last chunk and the one that went through"
    );
    workers.shutdown(Duration::from_secs(5)).await;
}

pub(crate) async fn tokens_are_refreshed_and_a_revoked_grant_disconnects(app: TestApp) {
    let (app, platforms) = publishing(app).await;
    let org = studio(&app).await;
    // Expires in two minutes: refreshed before anything is sent.
    connect(&app, &org, "youtube", "UC-studio", 2).await;
    platforms.grant(ACCESS, Some((REFRESH, "ya29.fresh")));
    platforms.expire(ACCESS);
    let clip = video("mp4", 640, 360, 4, false, 0);
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let workers = workers(&app);
    wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    let seen = platforms.seen();
    assert!(seen[0].uri.ends_with("/youtube/token"), "{:?}", seen[0].uri);
    assert!(seen[0].text.contains("grant_type=refresh_token"));
    assert!(seen[1..]
        .iter()
        .all(|s| s.header("authorization") == Some("Bearer ya29.fresh")));
    let channel = channel_of(
        &app,
        &org.id,
        xf_core::media::Platform::Youtube,
        "UC-studio",
    )
    .await;
    assert!(channel.expires_at.unwrap() > app.xf.now().plus(chrono::Duration::minutes(50)));
    assert!(
        channel.sealed_refresh_token.is_some(),
        "Google sent no new refresh token; the old one is kept"
    );

    // A token refused mid-way (401) is refreshed once and the step tried again.
    platforms.grant("ya29.fresh", Some((REFRESH, "ya29.third")));
    platforms.expire("ya29.fresh");
    let second = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    wait_for(&app, &org.key, &second, |i| i["status"] == "completed").await;

    // The user revokes the grant: the refresh fails, the channel is disconnected, and its
    // posts that wait fail too, with a clear error.
    platforms.revoke(REFRESH);
    platforms.expire("ya29.third");
    let later = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube"]"#),
            ("scheduledAt", "2026-12-24T18:00:00Z"),
        ],
    )
    .await;
    let third = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let shown = wait_for(&app, &org.key, &third, |i| i["status"] == "failed").await;
    let error = shown["youtube"]["error"].as_str().unwrap();
    assert!(
        error.contains("disconnected") && error.contains("invalid_grant"),
        "{error}"
    );
    let shown = item(&app, &org.key, &later).await;
    assert_eq!(shown["status"], "failed");
    assert!(shown["youtube"]["error"]
        .as_str()
        .unwrap()
        .contains("connect it again"));
    let channel = channel_of(
        &app,
        &org.id,
        xf_core::media::Platform::Youtube,
        "UC-studio",
    )
    .await;
    assert!(channel.disconnected.is_some());
    // Connecting it again clears the mark.
    connect(&app, &org, "youtube", "UC-studio", 60).await;
    let channel = channel_of(
        &app,
        &org.id,
        xf_core::media::Platform::Youtube,
        "UC-studio",
    )
    .await;
    assert_eq!(channel.disconnected, None);
    workers.shutdown(Duration::from_secs(5)).await;
}

/// The stored channel `account` of `platform` of organization `org_id`.
async fn channel_of(
    app: &TestApp,
    org_id: &str,
    platform: xf_core::media::Platform,
    account: &str,
) -> xf_core::media::Channel {
    app.store
        .find_channel(
            &xf_core::ids::OrganizationId::parse(org_id).unwrap(),
            platform,
            account,
        )
        .await
        .unwrap()
        .expect("the channel is stored")
}

async fn a_rate_limit_waits_for_its_reset(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 60)]).await;
    platforms.fail_next(
        Route::YoutubeSession,
        Failure::Answer(
            429,
            json!({"error": {"code": 429, "message": "Too many requests",
            "errors": [{"reason": "rateLimitExceeded"}]}}),
            Some(120),
        ),
    );
    let clip = video("mp4", 640, 360, 4, false, 0);
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let workers = workers(&app);
    let shown = wait_for_error(&app, &org.key, &id, "youtube", "rate limited").await;
    assert_eq!(shown["status"], "processing");
    let job = job_of(&app, &id, "youtube").await;
    assert!(
        job.run_at >= app.xf.now().plus(chrono::Duration::seconds(119)),
        "{job:?}"
    );
    app.clock.advance(chrono::Duration::seconds(60));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(sessions(&platforms), 1, "nothing is sent before the reset");
    app.clock.advance(chrono::Duration::seconds(61));
    wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    workers.shutdown(Duration::from_secs(5)).await;
}

/// Connects a YouTube channel and an Instagram account, has YouTube refuse the next upload
/// session, and posts a video to both (the workers must run): the item's id and how it
/// shows once Instagram published and YouTube failed.
async fn refused_on_youtube_published_on_instagram(
    app: &TestApp,
    platforms: &PlatformStandIn,
    org: &Studio,
) -> (String, Value) {
    connect(app, org, "youtube", "UC-studio", 60).await;
    connect(app, org, "instagram", "17841400000000001", 60).await;
    platforms.fail_next(
        Route::YoutubeSession,
        Failure::Answer(
            400,
            json!({"error": {"code": 400, "message": "The video was rejected.",
            "errors": [{"reason": "invalidVideoMetadata"}]}}),
            None,
        ),
    );
    let clip = video("mp4", 640, 360, 4, false, 0);
    let id = post_video(
        app,
        org,
        &clip,
        &[
            ("platforms", r#"["youtube", "instagram"]"#),
            ("instagramCaption", "Both"),
        ],
    )
    .await;
    let shown = wait_for(app, &org.key, &id, |i| {
        i["instagram"]["status"] == "published" && i["youtube"]["status"] == "failed"
    })
    .await;
    (id, shown)
}

pub(crate) async fn a_refusal_fails_that_platform_only(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[]).await;
    let workers = workers(&app);
    let (id, shown) = refused_on_youtube_published_on_instagram(&app, &platforms, &org).await;
    assert_eq!(shown["status"], "failed");
    assert_eq!(
        shown["youtube"]["error"],
        "invalidVideoMetadata: The video was rejected."
    );
    assert_eq!(shown["instagram"]["error"], Value::Null);
    assert!(shown["instagram"]["mediaId"].as_str().is_some());
    let job = job_of(&app, &id, "youtube").await;
    assert_eq!(job.status, xf_core::model::JobStatus::Failed);
    assert_eq!(job.job_type, MEDIA_PUBLISH);
    workers.shutdown(Duration::from_secs(5)).await;
}

pub(crate) async fn instagram_pulls_the_signed_url_and_publishes(app: TestApp) {
    let (app, platforms, org) =
        studio_connected(app, &[("instagram", "17841400000000001", 60)]).await;
    let clip = video("mp4", 640, 360, 4, true, 0);
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["instagram"]"#),
            ("instagramCaption", "Reel one #launch"),
        ],
    )
    .await;
    let photo = image("jpg", 1080, 1080);
    let reply = upload(
        &app,
        &org.key,
        "/media/images",
        &[
            ("platforms", r#"["instagram"]"#),
            ("description", "A square"),
        ],
        Some(("square.jpg", &photo)),
    )
    .await;
    let image_id = reply.expect(201)[0]["id"].as_str().unwrap().to_owned();
    let workers = workers(&app);
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    let media = platforms.instagram_media();
    let (media_id, _) = media
        .iter()
        .find(|(_, caption)| caption.as_deref() == Some("Reel one #launch"))
        .unwrap();
    assert_eq!(shown["instagram"]["mediaId"], media_id.as_str());
    assert_eq!(
        shown["instagram"]["url"],
        format!("https://www.instagram.com/reel/{media_id}/")
    );
    wait_for_image(&app, &org.key, &image_id, "completed").await;
    // The stand-in fetched both files whole through their signed URLs.
    let mut fetched: Vec<usize> = platforms
        .fetched()
        .into_iter()
        .map(|f| f.unwrap())
        .collect();
    fetched.sort();
    let mut sizes = vec![clip.len(), photo.len()];
    sizes.sort();
    assert_eq!(fetched, sizes);
    // The container was created with the documented fields, and polled until finished.
    let created = platforms
        .seen()
        .into_iter()
        .find(|s| {
            s.method == Method::POST
                && s.uri.ends_with("/17841400000000001/media")
                && s.text.contains("REELS")
        })
        .unwrap();
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(created.text.as_bytes())
            .into_owned()
            .collect();
    assert_eq!(form["media_type"], "REELS");
    assert_eq!(form["caption"], "Reel one #launch");
    assert_eq!(form["access_token"], ACCESS);
    let signed = form["video_url"].clone();
    assert!(signed.contains("/m/med_"), "{signed}");

    // The URL works with its signature, not without it, and not once it expired.
    let client = reqwest::Client::new();
    let ok = client
        .get(&signed)
        .header("range", "bytes=0-99")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 206);
    assert_eq!(
        ok.headers()["content-range"],
        format!("bytes 0-99/{}", clip.len()).as_str()
    );
    assert_eq!(ok.bytes().await.unwrap().as_ref(), &clip[..100]);
    let tampered = format!("{}x", signed.trim_end_matches(|c: char| c != '.'));
    assert_eq!(client.get(&tampered).send().await.unwrap().status(), 404);
    let other_item = signed.replace(&id, "med_0000000000000000000000000");
    assert_eq!(client.get(&other_item).send().await.unwrap().status(), 404);
    let unsatisfiable = client
        .get(&signed)
        .header("range", format!("bytes={}-", clip.len()))
        .send()
        .await
        .unwrap();
    assert_eq!(unsatisfiable.status(), 416);
    app.clock.advance(chrono::Duration::hours(7));
    assert_eq!(client.get(&signed).send().await.unwrap().status(), 404);

    // An expired token (Graph code 190) cannot be refreshed on Instagram: the channel is
    // disconnected and the post fails saying so.
    platforms.expire(ACCESS);
    let late = post_video(&app, &org, &clip, &[("platforms", r#"["instagram"]"#)]).await;
    let shown = wait_for(&app, &org.key, &late, |i| i["status"] == "failed").await;
    let error = shown["instagram"]["error"].as_str().unwrap();
    assert!(error.contains("disconnected"), "{error}");
    workers.shutdown(Duration::from_secs(5)).await;
}

/// A scheduled post, two instances with workers on one PostgreSQL database: nothing runs
/// before its time, and at its time exactly one instance publishes it, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_post_is_published_once_by_two_instances() {
    let (first, platforms) = publishing(TestApp::postgres().await).await;
    platforms.grant(ACCESS, None);
    let (youtube, instagram) = (platforms.youtube_config(), platforms.instagram_config());
    let second = TestApp::configured(first.store.clone(), |builder| {
        builder
            .publisher(Arc::new(Youtube::new(youtube)))
            .publisher(Arc::new(Instagram::new(instagram)))
    });
    let org = studio(&first).await;
    connect(&first, &org, "youtube", "UC-studio", 24 * 60).await;
    let clip = video("mp4", 640, 360, 4, false, 0);
    let id = post_video(
        &first,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube"]"#),
            ("scheduledAt", "2026-11-16T11:20:30Z"),
        ],
    )
    .await;
    let (one, two) = (workers(&first), workers(&second));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let shown = item(&first, &org.key, &id).await;
    assert_eq!(
        (shown["status"].clone(), shown["youtube"]["status"].clone()),
        (json!("scheduled"), json!("idle"))
    );
    assert!(
        platforms.seen().is_empty(),
        "nothing is sent before the time"
    );
    for app in [&first, &second] {
        app.clock.advance(chrono::Duration::minutes(60));
    }
    let shown = wait_for(&second, &org.key, &id, |i| i["status"] == "completed").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(platforms.videos().len(), 1);
    assert_eq!(sessions(&platforms), 1);
    assert_eq!(shown["youtube"]["videoId"], platforms.videos()[0]["id"]);
    one.shutdown(Duration::from_secs(5)).await;
    two.shutdown(Duration::from_secs(5)).await;
}

async fn upload_image(
    app: &TestApp,
    org: &Studio,
    photo: &[u8],
    fields: &[(&str, &str)],
) -> String {
    let reply = upload(
        app,
        &org.key,
        "/media/images",
        fields,
        Some(("photo.jpg", photo)),
    )
    .await;
    reply.expect(201)[0]["id"].as_str().unwrap().to_owned()
}

/// Reads the image until its status is `status`.
async fn wait_for_image(app: &TestApp, key: &str, id: &str, status: &str) -> Value {
    wait_at(app, key, &format!("/media/images/{id}"), |i| {
        i["status"] == status
    })
    .await
}

pub(crate) async fn tiktok_posts_in_chunks_sends_inbox_uploads_and_pulls_photos(app: TestApp) {
    let (app, platforms) = publishing(app).await;
    let org = studio(&app).await;
    // The token expires in two minutes: refreshed first, and TikTok rotates the refresh token.
    connect(&app, &org, "tiktok", "tt-creator", 2).await;
    platforms.grant("act.old", Some((REFRESH, "act.fresh")));
    // About 12 MB: two chunks by TikTok's rules (5 MB, then the rest).
    let clip = grainy_video("mp4", 640, 360, 12);
    let size = clip.len() as u64;
    assert!(size >= 10 << 20, "{size}");
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["tiktok"]"#),
            ("tiktok", r#"{"caption": "Launch #fyp", "privacy": "PUBLIC_TO_EVERYONE", "disableDuet": true}"#),
        ],
    )
    .await;
    let workers = workers(&app);
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    let post_id = shown["tiktok"]["videoId"].as_str().unwrap().to_owned();
    assert_eq!(
        shown["tiktok"]["url"],
        format!("https://www.tiktok.com/@tt-creator/video/{post_id}")
    );
    let init = platforms
        .seen()
        .into_iter()
        .find(|s| s.uri.ends_with("/v2/post/publish/video/init/"))
        .unwrap();
    let body: Value = serde_json::from_str(&init.text).unwrap();
    assert_eq!(body["post_info"]["title"], "Launch #fyp");
    assert_eq!(body["post_info"]["privacy_level"], "PUBLIC_TO_EVERYONE");
    assert_eq!(body["post_info"]["disable_duet"], true);
    assert_eq!(body["source_info"]["source"], "FILE_UPLOAD");
    assert_eq!(body["source_info"]["chunk_size"], 5 << 20);
    assert_eq!(body["source_info"]["total_chunk_count"], 2);
    let chunks: Vec<String> = platforms
        .seen()
        .iter()
        .filter(|s| s.method == Method::PUT && s.uri.contains("/tiktok/upload/"))
        .map(|s| s.header("content-range").unwrap().to_owned())
        .collect();
    assert_eq!(
        chunks,
        vec![
            format!("bytes 0-{}/{size}", (5 << 20) - 1),
            format!("bytes {}-{}/{size}", 5 << 20, size - 1)
        ]
    );

    // autoPublish off: the inbox flow, which a person finishes: manual, and completed.
    let small = video("mp4", 640, 360, 4, true, 0);
    let inbox = post_video(
        &app,
        &org,
        &small,
        &[
            ("platforms", r#"["tiktok"]"#),
            ("tiktokAutoPublish", "false"),
        ],
    )
    .await;
    let shown = wait_for(&app, &org.key, &inbox, |i| {
        i["tiktok"]["status"] == "manual"
    })
    .await;
    assert_eq!(shown["status"], "completed");
    assert!(shown["tiktok"]["error"].as_str().unwrap().contains("inbox"));
    assert!(platforms
        .seen()
        .iter()
        .any(|s| s.uri.ends_with("/v2/post/publish/inbox/video/init/")));

    // A day later the rotated refresh token is the one that works.
    app.clock.advance(chrono::Duration::hours(25));
    let photo = image("jpg", 1080, 1350);
    let photo_id = upload_image(
        &app,
        &org,
        &photo,
        &[
            ("platforms", r#"["tiktok"]"#),
            ("title", "Spring"),
            ("tiktokCaption", "New season"),
        ],
    )
    .await;
    let shown = wait_for_image(&app, &org.key, &photo_id, "completed").await;
    assert_eq!(shown["tiktok"]["status"], "published");
    let photo_init = platforms
        .seen()
        .into_iter()
        .find(|s| s.uri.ends_with("/v2/post/publish/content/init/"))
        .unwrap();
    let body: Value = serde_json::from_str(&photo_init.text).unwrap();
    assert_eq!(body["media_type"], "PHOTO");
    assert_eq!(body["post_mode"], "DIRECT_POST");
    assert_eq!(body["source_info"]["source"], "PULL_FROM_URL");
    assert!(body["source_info"]["photo_images"][0]
        .as_str()
        .unwrap()
        .contains("/m/med_"));
    let refreshes = platforms
        .seen()
        .iter()
        .filter(|s| s.uri.ends_with("/v2/oauth/token/"))
        .count();
    assert_eq!(refreshes, 2);
    assert_eq!(platforms.tiktok_posts().len(), 3);
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn tiktok_refuses_what_the_creator_may_not_post_before_uploading(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("tiktok", "tt-creator", 60)]).await;
    // The creator of an app TikTok has not audited: private posts only, of at most 4 s here.
    platforms.tiktok_creator(&["SELF_ONLY"], 4);
    let short = video("mp4", 640, 360, 3, true, 0);
    let tiktok_only = ("platforms", r#"["tiktok"]"#);
    let public = post_video(
        &app,
        &org,
        &short,
        &[
            tiktok_only,
            ("tiktok", r#"{"privacy": "PUBLIC_TO_EVERYONE"}"#),
        ],
    )
    .await;
    let long = video("mp4", 640, 360, 6, true, 0);
    let too_long = post_video(
        &app,
        &org,
        &long,
        &[tiktok_only, ("tiktok", r#"{"privacy": "SELF_ONLY"}"#)],
    )
    .await;
    let photo = image("jpg", 1080, 1350);
    let public_photo = upload_image(
        &app,
        &org,
        &photo,
        &[tiktok_only, ("tiktokPrivacy", "PUBLIC_TO_EVERYONE")],
    )
    .await;
    let workers = workers(&app);
    let shown = wait_for(&app, &org.key, &public, |i| i["status"] == "failed").await;
    let error = shown["tiktok"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("privacy_level_option_mismatch: "),
        "{error}"
    );
    assert!(
        error.contains("SELF_ONLY only, not PUBLIC_TO_EVERYONE"),
        "{error}"
    );
    let shown = wait_for(&app, &org.key, &too_long, |i| i["status"] == "failed").await;
    let error = shown["tiktok"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("duration_over_creator_limit: "),
        "{error}"
    );
    assert!(error.contains("at most 4 s"), "{error}");
    let shown = wait_for_image(&app, &org.key, &public_photo, "failed").await;
    let error = shown["tiktok"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("privacy_level_option_mismatch: "),
        "{error}"
    );
    // Refused before anything was sent: no init, no bytes.
    assert!(
        !platforms
            .seen()
            .iter()
            .any(|s| s.uri.contains("/init/") || s.uri.contains("/tiktok/upload/")),
        "nothing reaches TikTok's init or upload"
    );

    // Within the creator's options it posts, with the interactions the creator turned off
    // (stitches, in the stand-in's creator info) off.
    let private = post_video(
        &app,
        &org,
        &short,
        &[tiktok_only, ("tiktok", r#"{"privacy": "SELF_ONLY"}"#)],
    )
    .await;
    wait_for(&app, &org.key, &private, |i| i["status"] == "completed").await;
    let seen = platforms.seen();
    let init = seen
        .iter()
        .find(|s| s.uri.ends_with("/v2/post/publish/video/init/"))
        .unwrap();
    let body: Value = serde_json::from_str(&init.text).unwrap();
    assert_eq!(body["post_info"]["privacy_level"], "SELF_ONLY");
    assert_eq!(body["post_info"]["disable_stitch"], true);
    assert_eq!(body["post_info"]["disable_comment"], false);
    // Each direct post asked first, as TikTok documents the call: POST, the bearer token,
    // a JSON content type, no body.
    let asked: Vec<_> = seen
        .iter()
        .filter(|s| s.uri.ends_with("/v2/post/publish/creator_info/query/"))
        .collect();
    assert_eq!(asked.len(), 4);
    for call in asked {
        assert_eq!(call.method, Method::POST);
        assert_eq!(
            call.header("authorization"),
            Some(&*format!("Bearer {ACCESS}"))
        );
        assert!(call
            .header("content-type")
            .unwrap()
            .starts_with("application/json"));
        assert_eq!(call.body_len, 0);
    }
    workers.shutdown(Duration::from_secs(5)).await;
}

pub(crate) async fn linkedin_uploads_parts_as_instructed_then_posts(app: TestApp) {
    let (app, platforms, org) =
        studio_connected(app, &[("linkedin", "urn:li:organization:42", 60)]).await;
    // About 10 MB: three parts of LinkedIn's 4 MB instructions.
    let clip = grainy_video("mp4", 640, 360, 10);
    let size = clip.len() as u64;
    // The post is refused once for the rate limit, and made after its reset.
    platforms.fail_next(
        Route::LinkedinPost,
        Failure::Answer(429, json!({"status": 429, "code": "TOO_MANY_REQUESTS", "message": "Resource level throttle limit reached"}), Some(30)),
    );
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["linkedin"]"#),
            ("title", "Quarterly"),
            (
                "linkedinComment",
                "Our quarter (part 1) @ HQ: #results *up* 10_000 ~ <3 [draft] {v2} a|b C:\\q",
            ),
        ],
    )
    .await;
    let workers = workers(&app);
    wait_for_error(&app, &org.key, &id, "linkedin", "TOO_MANY_REQUESTS").await;
    assert_eq!(retry_of(&app, &id, "linkedin").await, 30);
    app.clock.advance(chrono::Duration::seconds(31));
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    let posts = platforms.linkedin_posts();
    assert_eq!(posts.len(), 1);
    let (urn, media) = &posts[0];
    assert_eq!(shown["linkedin"]["urn"], urn.as_str());
    assert_eq!(
        shown["linkedin"]["url"],
        format!("https://www.linkedin.com/feed/update/{urn}/")
    );
    assert!(media.starts_with("urn:li:video:"));
    // Each part exactly as instructed, the ETags in order, the versioned headers, the post.
    let seen = platforms.seen();
    let parts: Vec<usize> = seen
        .iter()
        .filter(|s| s.method == Method::PUT && s.uri.contains("/linkedin/upload/"))
        .map(|s| s.body_len)
        .collect();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts.iter().sum::<usize>() as u64, size);
    let finalize = seen
        .iter()
        .find(|s| s.uri.contains("action=finalizeUpload"))
        .unwrap();
    let body: Value = serde_json::from_str(&finalize.text).unwrap();
    assert_eq!(
        body["finalizeUploadRequest"]["uploadedPartIds"],
        json!(["etag-0", "etag-1", "etag-2"])
    );
    let post = seen
        .iter()
        .rev()
        .find(|s| s.uri.ends_with("/rest/posts") && s.method == Method::POST)
        .unwrap();
    assert_eq!(
        post.header("linkedin-version"),
        Some(xf_core::media::platforms::linkedin::API_VERSION)
    );
    assert_eq!(post.header("x-restli-protocol-version"), Some("2.0.0"));
    let body: Value = serde_json::from_str(&post.text).unwrap();
    assert_eq!(body["author"], "urn:li:organization:42");
    // The commentary in LinkedIn's little text format: shown exactly as written.
    let caption = "Our quarter (part 1) @ HQ: #results *up* 10_000 ~ <3 [draft] {v2} a|b C:\\q";
    assert_eq!(
        body["commentary"],
        r"Our quarter \(part 1\) \@ HQ: #results \*up\* 10\_000 \~ \<3 \[draft\] \{v2\} a\|b C:\\q"
    );
    assert_eq!(platforms.linkedin_commentary(), vec![caption.to_owned()]);
    assert_eq!(body["content"]["media"]["title"], "Quarterly");

    // An image goes the same way through /rest/images.
    let photo = image("jpg", 1200, 627);
    let photo_id = upload_image(&app, &org, &photo, &[("platforms", r#"["linkedin"]"#)]).await;
    wait_for_image(&app, &org.key, &photo_id, "completed").await;
    assert!(platforms.linkedin_posts()[1].1.starts_with("urn:li:image:"));
    workers.shutdown(Duration::from_secs(5)).await;
}

pub(crate) async fn pinterest_pins_videos_and_images_once(app: TestApp) {
    let (app, platforms) = publishing(app).await;
    let org = studio(&app).await;
    connect(&app, &org, "pinterest", "pin-user", 60).await;
    platforms.grant(ACCESS, None);
    let clip = video("mp4", 640, 360, 5, true, 0);
    // The pin is made, but its answer is lost: the board is read, and no second pin made.
    platforms.fail_next(
        Route::PinterestPin,
        Failure::ActThenStall(Duration::from_secs(7)),
    );
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["pinterest"]"#),
            (
                "pinterest",
                r#"{"boardId": "board-9", "title": "Spring looks", "description": "Five looks"}"#,
            ),
        ],
    )
    .await;
    let workers = workers(&app);
    wait_for_error(&app, &org.key, &id, "pinterest", "not known").await;
    assert_eq!(retry_of(&app, &id, "pinterest").await, 5);
    app.clock.advance(chrono::Duration::seconds(10));
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    let pins = platforms.pins();
    assert_eq!(pins.len(), 1);
    let pin_id = pins[0]["id"].as_str().unwrap();
    assert_eq!(shown["pinterest"]["pinId"], pin_id);
    assert_eq!(
        shown["pinterest"]["url"],
        format!("https://www.pinterest.com/pin/{pin_id}/")
    );
    let seen = platforms.seen();
    let pin = seen.iter().find(|s| s.uri.ends_with("/v5/pins")).unwrap();
    let body: Value = serde_json::from_str(&pin.text).unwrap();
    assert_eq!(body["board_id"], "board-9");
    assert_eq!(body["media_source"]["source_type"], "video_id");
    assert!(
        seen.iter().any(|s| s.uri.ends_with("/pinterest/s3")),
        "the upload form was sent"
    );

    // An image is pinned from its signed URL; a refused pin fails with Pinterest's code.
    let photo = image("jpg", 1000, 1500);
    let photo_id = upload_image(
        &app,
        &org,
        &photo,
        &[
            ("platforms", r#"["pinterest"]"#),
            ("pinterestBoardId", "board-9"),
        ],
    )
    .await;
    wait_for_image(&app, &org.key, &photo_id, "completed").await;
    // A pinned image's pin is deleted as a video's is.
    let path = format!("/media/images/{photo_id}/posts/pinterest");
    delete_at(&app, &org.key, &path).await.expect(202);
    let shown = wait_at(&app, &org.key, &format!("/media/images/{photo_id}"), |i| {
        i["pinterest"]["status"] == "deleted"
    })
    .await;
    assert_eq!(shown["status"], "completed");
    platforms.fail_next(
        Route::PinterestPin,
        Failure::Answer(
            404,
            json!({"code": 40, "message": "Board not found."}),
            None,
        ),
    );
    let refused = upload_image(
        &app,
        &org,
        &photo,
        &[
            ("platforms", r#"["pinterest"]"#),
            ("pinterestBoardId", "gone"),
        ],
    )
    .await;
    let shown = wait_for_image(&app, &org.key, &refused, "failed").await;
    assert_eq!(shown["pinterest"]["error"], "40: Board not found.");
    assert_eq!(platforms.pins().len(), 2);
    workers.shutdown(Duration::from_secs(5)).await;
}

/// Two posts on one TikTok channel refresh its token at once; TikTok rotates refresh tokens,
/// so the refresh that comes second is refused. That is not a revoked grant: the job finds
/// the newer tokens the other stored, uses them, and the channel stays connected.
async fn a_refresh_that_lost_the_race_to_a_rotation_uses_the_new_token(app: TestApp) {
    let (app, platforms) = publishing(app).await;
    let org = studio(&app).await;
    connect(&app, &org, "tiktok", "tt-creator", 2).await;
    platforms.grant("act.old", Some((REFRESH, "act.fresh")));
    let clip = video("mp4", 640, 360, 4, false, 0);
    let first = post_video(&app, &org, &clip, &[("platforms", r#"["tiktok"]"#)]).await;
    let second = post_video(&app, &org, &clip, &[("platforms", r#"["tiktok"]"#)]).await;
    // One refresh waits until the other went through and rotated the refresh token.
    let held = platforms.hold(Route::TiktokToken, false);
    let workers = workers(&app);
    held.arrived().await;
    let mut done = 0;
    for _ in 0..500 {
        done = 0;
        for id in [&first, &second] {
            done += usize::from(item(&app, &org.key, id).await["status"] == "completed");
        }
        if done == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        done, 1,
        "the other post went through with the rotated token"
    );
    held.release();
    for id in [&first, &second] {
        wait_for(&app, &org.key, id, |i| i["status"] == "completed").await;
    }
    let channel = channel_of(
        &app,
        &org.id,
        xf_core::media::Platform::Tiktok,
        "tt-creator",
    )
    .await;
    assert_eq!(channel.disconnected, None);
    workers.shutdown(Duration::from_secs(5)).await;
}

/// Workers that die (their leases run out, the rescue puts the job back) use up the post's
/// attempts; the attempt after the last fails the post with a clear error instead of leaving
/// it `processing` forever.
async fn a_worker_dying_on_the_last_attempt_fails_the_post(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 24 * 60)]).await;
    let clip = video("mp4", 640, 360, 4, false, 0);
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    for _ in 0..6 {
        let now = app.xf.now();
        let claimed = app
            .store
            .claim_jobs(&xf_core::store::ClaimRequest {
                job_types: vec![MEDIA_PUBLISH.to_owned()],
                limit: 1,
                now,
                lease_expires_at: now,
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        app.clock.advance(chrono::Duration::seconds(1));
        let rescued = app.store.rescue_expired(app.xf.now()).await.unwrap();
        assert_eq!(rescued.requeued, 1);
    }
    let workers = workers(&app);
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "failed").await;
    let error = shown["youtube"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("publishing stopped after 6 attempts"),
        "{error}"
    );
    let job = job_of(&app, &id, "youtube").await;
    assert_eq!(job.status, xf_core::model::JobStatus::Failed);
    assert!(platforms.seen().is_empty(), "nothing was sent");
    workers.shutdown(Duration::from_secs(5)).await;
}

/// The deliveries of `receiver` from index `from`, once `n` more arrived, each verified with
/// the `standardwebhooks` crate, as `(type, body)` sorted by type (deliveries run in
/// parallel, so they may arrive in any order).
async fn deliveries(
    receiver: &xf_tests::receiver::Receiver,
    secret: &str,
    schemas: &xf_tests::Schemas,
    from: usize,
    n: usize,
) -> Vec<(String, Value)> {
    let verify = standardwebhooks::Webhook::new(secret).expect("a valid secret");
    let received = receiver.wait_for(from + n, Duration::from_secs(10)).await;
    let mut bodies: Vec<(String, Value)> = received[from..]
        .iter()
        .map(|message| {
            verify
                .verify(&message.body, &message.headers)
                .expect("the standardwebhooks crate accepts the signature");
            let body = message.json();
            assert_eq!(body["id"], message.header("webhook-id"));
            assert_eq!(body.get("test"), None, "not a test delivery");
            // The body is what the document's `webhooks` section says it is.
            schemas.check_webhook(&body);
            (body["type"].as_str().unwrap().to_owned(), body)
        })
        .collect();
    bodies.sort_by(|a, b| a.0.cmp(&b.0));
    bodies
}

/// A media-plan organization registers a webhook (it may: its plan has the media API), which
/// subscribes to the media events by default and may not subscribe to job events. A publish
/// against the stand-ins, a refusal and a revoked grant each send their events once, signed,
/// with the documented bodies; the changes that reach no such state send nothing.
async fn media_events_reach_the_webhooks_that_subscribe(app: TestApp) {
    use xf_tests::receiver::{Answer, Receiver};
    let (app, platforms) = publishing(app).await;
    // The signatures' timestamps must be near the verifier's (real) clock.
    app.clock
        .set(xf_core::time::Timestamp::from_datetime(chrono::Utc::now()));
    platforms.grant(ACCESS, Some((REFRESH, "ya29.fresh")));
    let org = studio(&app).await;
    let receiver = Receiver::start(Answer::Status(204)).await;
    let document = app
        .send(xf_tests::request(
            Method::GET,
            "/openapi.json",
            None,
            None,
            &[],
        ))
        .await;
    let schemas = xf_tests::Schemas::of(&document.body);

    // Job events are not the plan's: a clear 400, for a subscription and a test delivery.
    let refused = app
        .post(
            "/webhooks",
            &org.key,
            json!({"name": "jobs", "url": receiver.url, "events": ["job.completed"]}),
        )
        .await;
    refused.expect_error(400, "validation_error");
    let message = refused.body["error"]["details"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("job.completed") && message.contains("plus"),
        "{message}"
    );
    let created = app
        .post(
            "/webhooks",
            &org.key,
            json!({"name": "media", "url": receiver.url}),
        )
        .await;
    let created = created.expect(201).clone();
    assert_eq!(created["webhook"]["events"], json!(crate::MEDIA_EVENTS));
    let secret = created["secret"].as_str().unwrap().to_owned();
    let hook = created["webhook"]["id"].as_str().unwrap().to_owned();
    let test_job = app
        .post(
            &format!("/webhooks/{hook}/test"),
            &org.key,
            json!({"event": "job.failed"}),
        )
        .await;
    test_job.expect_error(400, "validation_error");

    let workers = workers(&app);

    // One post refused, the other published: both posts' events, then the item's.
    let (mixed, shown) = refused_on_youtube_published_on_instagram(&app, &platforms, &org).await;
    let clip = video("mp4", 640, 360, 4, false, 0);
    let got = deliveries(&receiver, &secret, &schemas, 0, 3).await;
    let types: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        ["media.failed", "media.post.failed", "media.post.published"]
    );
    let failed = &got[0].1["data"];
    assert_eq!(failed["media"]["id"], mixed.as_str());
    assert_eq!(failed["media"]["status"], "failed");
    assert_eq!(failed["media"]["youtube"]["status"], "failed");
    assert_eq!(failed["media"]["instagram"]["status"], "published");
    assert_eq!(failed["media"]["instagram"], shown["instagram"]);
    let refused = &got[1].1["data"]["post"];
    assert_eq!(
        refused,
        &json!({
            "platform": "youtube", "accountId": "UC-studio", "status": "failed",
            "postId": null, "url": null,
            "error": "invalidVideoMetadata: The video was rejected.",
            "failure": {"source": "platform", "code": "invalidVideoMetadata", "message": "The video was rejected."}
        })
    );
    assert_eq!(got[1].1["data"]["media"]["id"], mixed.as_str());
    let published = &got[2].1["data"]["post"];
    assert_eq!(published["platform"], "instagram");
    assert_eq!(published["accountId"], "17841400000000001");
    assert_eq!(published["status"], "published");
    assert_eq!(published["postId"], shown["instagram"]["mediaId"]);
    assert_eq!(published["url"], shown["instagram"]["url"]);
    assert_eq!(published["error"], Value::Null);
    for (_, body) in &got {
        assert!(body["id"].as_str().unwrap().starts_with("evt_"));
        crate::assert_time(&body["createdAt"]);
    }

    // Published everywhere: the post's event and `media.completed`.
    let single = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let shown = wait_for(&app, &org.key, &single, |i| i["status"] == "completed").await;
    schemas.check("MediaItemView", &shown);
    let got = deliveries(&receiver, &secret, &schemas, 3, 2).await;
    assert_eq!(got[0].0, "media.completed");
    assert_eq!(got[0].1["data"]["media"]["youtube"], shown["youtube"]);
    assert_eq!(got[1].0, "media.post.published");
    assert_eq!(
        got[1].1["data"]["post"]["postId"],
        shown["youtube"]["videoId"]
    );

    // The grant is revoked: the channel's event, and the post it failed with its item's.
    platforms.revoke(REFRESH);
    platforms.expire(ACCESS);
    let doomed = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    wait_for(&app, &org.key, &doomed, |i| i["status"] == "failed").await;
    let got = deliveries(&receiver, &secret, &schemas, 5, 3).await;
    let types: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        ["channel.disconnected", "media.failed", "media.post.failed"]
    );
    let channel = &got[0].1["data"]["channel"];
    assert_eq!(channel["platform"], "youtube");
    assert_eq!(channel["accountId"], "UC-studio");
    assert!(channel["id"].as_str().unwrap().starts_with("ch_"));
    assert!(channel["reason"]
        .as_str()
        .unwrap()
        .contains("invalid_grant"));
    assert!(channel["reconnect"]
        .as_str()
        .unwrap()
        .contains(channel["id"].as_str().unwrap()));
    let post = &got[2].1["data"]["post"];
    assert_eq!(post["failure"]["source"], "xf");
    assert_eq!(post["failure"]["code"], "channel_disconnected");
    // `error` is the text the item's post shows, a string as everywhere else.
    let shown = &got[2].1["data"]["media"]["youtube"]["posts"][0]["error"];
    assert!(
        post["error"].is_string() && post["error"] == *shown,
        "{post} {shown}"
    );

    // Nothing else was sent (no duplicates, no event for the changes in between), and the
    // log has one successful attempt per event.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.count(), 8);
    let log = app
        .get(&format!("/webhooks/{hook}/deliveries?limit=100"), &org.key)
        .await;
    let log = log.expect(200)["deliveries"].as_array().unwrap().clone();
    assert_eq!(log.len(), 8, "{log:?}");
    assert!(log.iter().all(|row| row["success"] == true));

    // A test delivery of a media event carries a sample of its body.
    let tested = app
        .post(
            &format!("/webhooks/{hook}/test"),
            &org.key,
            json!({"event": "media.post.published"}),
        )
        .await;
    assert_eq!(
        tested.expect(200)["delivery"]["event"],
        "media.post.published"
    );
    let sample = receiver.wait_for(9, Duration::from_secs(5)).await[8].json();
    assert_eq!(sample["test"], true);
    assert_eq!(sample["data"]["post"]["status"], "published");
    assert_eq!(sample["data"]["media"]["youtube"]["status"], "published");
    workers.shutdown(Duration::from_secs(5)).await;
}

/// `POST /media/{kind}/{id}/cancel` with `key`, and optionally an `Idempotency-Key`.
async fn cancel(
    app: &TestApp,
    key: &str,
    path: &str,
    idempotency: Option<&str>,
) -> xf_tests::Reply {
    let headers: Vec<(&str, &str)> = idempotency
        .map(|k| vec![("idempotency-key", k)])
        .unwrap_or_default();
    app.send(xf_tests::request(
        Method::POST,
        &format!("{path}/cancel"),
        Some(key),
        None,
        &headers,
    ))
    .await
}

pub(crate) async fn a_cancelled_schedule_never_publishes(app: TestApp) {
    let (app, platforms, org) = studio_connected(
        app,
        &[
            ("youtube", "UC-studio", 24 * 60),
            ("tiktok", "tt-creator", 24 * 60),
        ],
    )
    .await;
    let at = serde_json::to_value(app.xf.now().plus(chrono::Duration::minutes(30))).unwrap();
    let at = at.as_str().unwrap();
    let clip = video("mp4", 640, 360, 4, true, 0);
    let fields = [
        ("platforms", r#"["youtube", "tiktok"]"#),
        ("scheduledAt", at),
    ];
    let cancelled = post_video(&app, &org, &clip, &fields).await;
    let kept = post_video(&app, &org, &clip, &fields).await;
    let path = format!("/media/videos/{cancelled}");

    let reply = cancel(&app, &org.key, &path, Some("cancel-1")).await;
    let data = reply.expect(200);
    assert_eq!(reply.body["message"], "video cancelled");
    assert_eq!(data["id"], cancelled.as_str());
    assert_eq!(data["status"], "cancelled");
    for platform in ["youtube", "tiktok"] {
        assert_eq!(data[platform]["status"], "cancelled");
        assert_eq!(data[platform]["posts"][0]["status"], "cancelled");
    }
    for platform in ["youtube", "tiktok"] {
        let job = job_of(&app, &cancelled, platform).await;
        assert_eq!(job.status, xf_core::model::JobStatus::Cancelled);
    }
    // The same key replays; a new cancel finds nothing left to cancel.
    let replay = cancel(&app, &org.key, &path, Some("cancel-1")).await;
    assert_eq!(replay.expect(200)["status"], "cancelled");
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let again = cancel(&app, &org.key, &path, None).await;
    again.expect_error(409, "conflict");
    let message = again.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("nothing left to cancel"), "{message}");
    assert!(message.contains("youtube is cancelled"), "{message}");
    // Not an image, not another organization's, not an id.
    cancel(&app, &org.key, &format!("/media/images/{cancelled}"), None)
        .await
        .expect_error(404, "not_found");
    let other = studio(&app).await;
    cancel(&app, &other.key, &path, None)
        .await
        .expect_error(404, "not_found");
    cancel(&app, &org.key, "/media/videos/med_nope", None)
        .await
        .expect_error(404, "not_found");
    let listed = app.get("/media/videos?status=cancelled", &org.key).await;
    let listed = listed.expect(200);
    assert_eq!(listed["videos"].as_array().unwrap().len(), 1);
    assert_eq!(listed["videos"][0]["id"], cancelled.as_str());

    // Past the time, the kept item publishes and the cancelled one sends nothing.
    let workers = workers(&app);
    app.clock.advance(chrono::Duration::minutes(31));
    wait_for(&app, &org.key, &kept, |i| i["status"] == "completed").await;
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(platforms.videos().len(), 1);
    assert_eq!(platforms.tiktok_posts().len(), 1);
    assert_eq!(sessions(&platforms), 1);
    assert_eq!(
        item(&app, &org.key, &cancelled).await["status"],
        "cancelled"
    );
    // A published item has nothing left to cancel either.
    let done = cancel(&app, &org.key, &format!("/media/videos/{kept}"), None).await;
    done.expect_error(409, "conflict");
    let message = done.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("youtube is published"), "{message}");
}

async fn a_cancel_during_a_running_upload_leaves_nothing_published(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 60)]).await;
    // Several chunks: the upload is held at its first.
    let clip = grainy_video("mp4", 320, 240, 4);
    let held = platforms.hold(Route::YoutubeChunk, false);
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let workers = workers(&app);
    held.arrived().await;
    let reply = cancel(&app, &org.key, &format!("/media/videos/{id}"), None).await;
    let data = reply.expect(200);
    assert_eq!(data["status"], "cancelled");
    assert_eq!(data["youtube"]["status"], "cancelled");
    held.release();
    // The running attempt is stopped (or finds the post cancelled at its next write).
    let job = job_of(&app, &id, "youtube").await;
    assert_eq!(job.status, xf_core::model::JobStatus::Cancelled);
    workers.shutdown(Duration::from_secs(5)).await;
    assert!(platforms.videos().is_empty(), "nothing was published");
    assert!(
        !platforms.seen().iter().any(|s| s.method == Method::PUT
            && chunk_ranges_of(s).is_some_and(|(_, last, total)| last + 1 == total)),
        "the upload was never finished"
    );
    let shown = item(&app, &org.key, &id).await;
    assert_eq!(shown["status"], "cancelled");
    assert_eq!(shown["youtube"]["posts"][0]["status"], "cancelled");
}

/// The `(first, last, total)` of a chunk `PUT`'s `Content-Range`, if it has one.
fn chunk_ranges_of(seen: &xf_tests::platforms::Seen) -> Option<(u64, u64, u64)> {
    let range = seen.header("content-range")?.strip_prefix("bytes ")?;
    let (span, total) = range.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    Some((first.parse().ok()?, last.parse().ok()?, total.parse().ok()?))
}

async fn a_post_past_its_irreversible_call_refuses_a_cancel(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 60)]).await;
    let clip = video("mp4", 640, 360, 4, false, 0);
    // The last chunk creates the video: held before it acts, the post is `Finalizing`.
    let held = platforms.hold(Route::YoutubeLastChunk, false);
    let id = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let workers = workers(&app);
    held.arrived().await;
    let reply = cancel(&app, &org.key, &format!("/media/videos/{id}"), None).await;
    reply.expect_error(409, "conflict");
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("already sent to YouTube"), "{message}");
    // Nor can it be deleted while its outcome is not known.
    let path = format!("/media/videos/{id}");
    let deleting = app
        .send(xf_tests::request(
            Method::DELETE,
            &path,
            Some(&org.key),
            None,
            &[],
        ))
        .await;
    deleting.expect_error(409, "conflict");
    let message = deleting.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("being created on YouTube"), "{message}");
    held.release();
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    assert_eq!(shown["youtube"]["status"], "published");
    assert_eq!(platforms.videos().len(), 1);
    workers.shutdown(Duration::from_secs(5)).await;
}

/// `PATCH path` with `key` and a raw body.
async fn patch(app: &TestApp, key: &str, path: &str, body: &str) -> xf_tests::Reply {
    app.send(xf_tests::request(
        Method::PATCH,
        path,
        Some(key),
        Some(body.to_owned()),
        &[("content-type", "application/json")],
    ))
    .await
}

pub(crate) async fn a_rescheduled_item_publishes_at_the_new_time_not_the_old(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 24 * 60)]).await;
    let time = |minutes: i64| {
        serde_json::to_value(app.xf.now().plus(chrono::Duration::minutes(minutes)))
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (old_time, new_time) = (time(30), time(90));
    let clip = video("mp4", 640, 360, 4, false, 0);
    let fields = [
        ("platforms", r#"["youtube"]"#),
        ("scheduledAt", old_time.as_str()),
        ("title", "Old title"),
    ];
    let moved = post_video(&app, &org, &clip, &fields).await;
    let kept = post_video(&app, &org, &clip, &fields).await;
    let path = format!("/media/videos/{moved}");

    let change = json!({
        "scheduledAt": new_time,
        "title": "New title",
        "description": null,
        "youtube": {"title": "Launch day", "privacy": "unlisted"},
    });
    let reply = patch(&app, &org.key, &path, &change.to_string()).await;
    let data = reply.expect(200);
    assert_eq!(data["id"], moved.as_str());
    assert_eq!(data["status"], "scheduled");
    assert_eq!(data["title"], "New title");
    assert_eq!(data["scheduledAt"], new_time.as_str());
    assert_eq!(data["youtube"]["settings"]["privacy"], "unlisted");
    assert_eq!(data["youtube"]["settings"]["title"], "Launch day");
    assert_eq!(data["youtube"]["status"], "idle");
    assert_eq!(item(&app, &org.key, &moved).await, *data);

    // Refusals, each naming its field; nothing changes.
    let refused = [
        ("{}", "body"),
        ("[]", "body"),
        (r#"{"platforms": "[\"youtube\"]"}"#, "platforms"),
        (r#"{"scheduledAt": "tomorrow"}"#, "scheduledAt"),
        (r#"{"title": 7}"#, "title"),
        (r#"{"youtube": {"privacy": "secret"}}"#, "youtube.privacy"),
        (
            r#"{"youtube": {"channels": ["UC-other"]}}"#,
            "youtube.channels",
        ),
        (
            r#"{"youtube": {"autoPublish": false}}"#,
            "youtube.autoPublish",
        ),
        (r#"{"youtube": {"title": "<b>bold</b>"}}"#, "youtube.title"),
        (r#"{"instagram": {"caption": "hi"}}"#, "instagram"),
    ];
    for (body, field) in refused {
        let reply = patch(&app, &org.key, &path, body).await;
        reply.expect_error(400, "validation_error");
        let details = reply.body["error"]["details"].as_array().unwrap();
        assert!(
            details.iter().any(|d| d["field"] == field),
            "{body}: {}",
            reply.body
        );
    }
    patch(&app, &org.key, &path, "{not json")
        .await
        .expect_error(400, "validation_error");
    assert_eq!(item(&app, &org.key, &moved).await, *data);
    let other = studio(&app).await;
    patch(&app, &other.key, &path, r#"{"title": "Theirs"}"#)
        .await
        .expect_error(404, "not_found");
    patch(
        &app,
        &org.key,
        &format!("/media/images/{moved}"),
        r#"{"title": "x"}"#,
    )
    .await
    .expect_error(404, "not_found");

    // At the old time only the other item publishes; at the new one, this one, as changed.
    let workers = workers(&app);
    app.clock.advance(chrono::Duration::minutes(31));
    wait_for(&app, &org.key, &kept, |i| i["status"] == "completed").await;
    assert_eq!(item(&app, &org.key, &moved).await["status"], "scheduled");
    assert_eq!(sessions(&platforms), 1);
    app.clock.advance(chrono::Duration::minutes(60));
    wait_for(&app, &org.key, &moved, |i| i["status"] == "completed").await;
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(platforms.videos().len(), 2);
    let session = platforms
        .seen()
        .into_iter()
        .filter(|s| s.method == Method::POST && s.uri.contains("uploadType=resumable"))
        .nth(1)
        .unwrap();
    let metadata: Value = serde_json::from_str(&session.text).unwrap();
    assert_eq!(metadata["snippet"]["title"], "Launch day");
    assert_eq!(metadata["status"]["privacyStatus"], "unlisted");

    // Published: too late to change.
    let late = patch(&app, &org.key, &path, r#"{"title": "Too late"}"#).await;
    late.expect_error(409, "conflict");
    let message = late.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("youtube") && message.contains("published"),
        "{message}"
    );
}

pub(crate) async fn deleting_an_item_stops_its_posts_and_removes_its_file(app: TestApp) {
    let files = Scratch::new();
    let blobs = Arc::new(xf_core::media::blob::LocalBlobStore::new(files.path()).unwrap());
    let store: Arc<dyn xf_core::media::blob::BlobStore> = blobs.clone();
    let (app, platforms) = publishing_with(app, |builder| builder.blob_store(store)).await;
    platforms.grant(ACCESS, None);
    let org = studio(&app).await;
    connect(&app, &org, "youtube", "UC-studio", 24 * 60).await;
    // Whether the item's file is in the blob store.
    let file_of = |id: &str| {
        let app = &app;
        let id = xf_core::ids::MediaId::parse(id).unwrap();
        async move { app.store.get_media(&id).await.unwrap().unwrap().file.key }
    };
    let kept = |key: String| {
        let blobs = Arc::clone(&blobs);
        async move {
            use xf_core::media::blob::BlobStore;
            blobs.open(&key).await.is_ok()
        }
    };
    let at = serde_json::to_value(app.xf.now().plus(chrono::Duration::minutes(30))).unwrap();
    let clip = video("mp4", 640, 360, 4, false, 0);
    let scheduled = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube"]"#),
            ("scheduledAt", at.as_str().unwrap()),
        ],
    )
    .await;
    let published = post_video(&app, &org, &clip, &[("platforms", r#"["youtube"]"#)]).await;
    let workers = workers(&app);
    wait_for(&app, &org.key, &published, |i| i["status"] == "completed").await;
    let (scheduled_file, published_file) = (file_of(&scheduled).await, file_of(&published).await);
    assert!(kept(scheduled_file.clone()).await && kept(published_file.clone()).await);

    let delete = |id: &str, key: &str| {
        let path = format!("/media/videos/{id}");
        let key = key.to_owned();
        let app = &app;
        async move {
            app.send(xf_tests::request(
                Method::DELETE,
                &path,
                Some(&key),
                None,
                &[],
            ))
            .await
        }
    };
    let job = job_of(&app, &scheduled, "youtube").await;
    let reply = delete(&scheduled, &org.key).await;
    let data = reply.expect(200);
    assert_eq!(reply.body["message"], "video deleted");
    assert_eq!(
        *data,
        json!({"id": scheduled, "deleted": true, "cancelledPosts": 1})
    );
    app.get(&format!("/media/videos/{scheduled}"), &org.key)
        .await
        .expect_error(404, "not_found");
    let job = app.store.get_job(&job.id).await.unwrap().unwrap();
    assert_eq!(job.status, xf_core::model::JobStatus::Cancelled);
    assert!(!kept(scheduled_file).await, "its file is gone");
    assert!(kept(published_file.clone()).await);
    delete(&scheduled, &org.key)
        .await
        .expect_error(404, "not_found");
    // Another organization's item, or the wrong kind, is not found, and stays.
    let other = studio(&app).await;
    delete(&published, &other.key)
        .await
        .expect_error(404, "not_found");
    app.send(xf_tests::request(
        Method::DELETE,
        &format!("/media/images/{published}"),
        Some(&org.key),
        None,
        &[],
    ))
    .await
    .expect_error(404, "not_found");

    // A published item: its post stays on YouTube, the item and its file go.
    let reply = delete(&published, &org.key).await;
    assert_eq!(reply.expect(200)["cancelledPosts"], 0);
    assert!(!kept(published_file).await);
    // The cancelled schedule's time passes: nothing more is sent.
    app.clock.advance(chrono::Duration::minutes(31));
    tokio::time::sleep(Duration::from_millis(300)).await;
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(platforms.videos().len(), 1);
    assert_eq!(sessions(&platforms), 1);
}

/// `DELETE path` with `key`.
async fn delete_at(app: &TestApp, key: &str, path: &str) -> xf_tests::Reply {
    app.send(xf_tests::request(
        Method::DELETE,
        path,
        Some(key),
        None,
        &[],
    ))
    .await
}

/// The `media.post.deleted` events written so far: each one's `data`.
async fn deleted_events(app: &TestApp) -> Vec<Value> {
    let events = app.store.list_events(None, 10_000).await.unwrap();
    events
        .into_iter()
        .filter(|e| e.event_type == xf_core::model::EventType::MediaPostDeleted)
        .filter_map(|e| match e.subject {
            xf_core::model::EventSubject::Snapshot(data) => Some(data),
            xf_core::model::EventSubject::Job(_) => None,
        })
        .collect()
}

pub(crate) async fn a_published_post_is_deleted_from_its_platform_once(app: TestApp) {
    let (app, platforms, org) = studio_connected(
        app,
        &[
            ("youtube", "UC-studio", 24 * 60),
            ("linkedin", "urn:li:organization:42", 24 * 60),
            ("pinterest", "pin-user", 24 * 60),
        ],
    )
    .await;
    let clip = video("mp4", 640, 360, 5, true, 0);
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube", "linkedin", "pinterest"]"#),
            ("pinterest", r#"{"boardId": "board-9"}"#),
        ],
    )
    .await;
    let workers = workers(&app);
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    let video_id = text(&shown["youtube"]["videoId"]);
    let urn = text(&shown["linkedin"]["urn"]);
    let pin = text(&shown["pinterest"]["pinId"]);
    let path = format!("/media/videos/{id}");

    // YouTube's deletion is held at the platform: the post is `deleting`, the item cannot be
    // deleted meanwhile, and a repeat starts nothing more.
    let held = platforms.hold(Route::YoutubeDelete, false);
    let reply = delete_at(&app, &org.key, &format!("{path}/posts/youtube")).await;
    let data = reply.expect(202);
    assert_eq!(reply.body["message"], "post deletion started");
    assert_eq!(data["youtube"]["posts"][0]["status"], "deleting");
    assert_eq!(data["status"], "completed");
    held.arrived().await;
    let refused = delete_at(&app, &org.key, &path).await;
    refused.expect_error(409, "conflict");
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("being deleted from YouTube"), "{message}");
    let again = delete_at(&app, &org.key, &format!("{path}/posts/youtube")).await;
    assert_eq!(
        again.expect(202)["youtube"]["posts"][0]["status"],
        "deleting"
    );
    held.release();
    let shown = wait_for(&app, &org.key, &id, |i| i["youtube"]["status"] == "deleted").await;
    let post = &shown["youtube"]["posts"][0];
    assert_eq!(post["status"], "deleted");
    assert_eq!(post["videoId"], video_id.as_str(), "the id it had is kept");
    assert_eq!(post["error"], Value::Null);
    assert_eq!(shown["youtube"]["videoId"], Value::Null);
    assert_eq!(shown["status"], "completed");

    // LinkedIn's (named by account) and Pinterest's.
    let account = "urn%3Ali%3Aorganization%3A42";
    delete_at(
        &app,
        &org.key,
        &format!("{path}/posts/linkedin?account={account}"),
    )
    .await
    .expect(202);
    delete_at(&app, &org.key, &format!("{path}/posts/pinterest"))
        .await
        .expect(202);
    let shown = wait_for(&app, &org.key, &id, |i| {
        i["linkedin"]["status"] == "deleted" && i["pinterest"]["status"] == "deleted"
    })
    .await;
    assert_eq!(shown["status"], "completed");
    // Deleted is deleted: a repeat answers the item as it is and sends nothing.
    let again = delete_at(&app, &org.key, &format!("{path}/posts/pinterest")).await;
    assert_eq!(again.expect(202)["pinterest"]["status"], "deleted");
    workers.shutdown(Duration::from_secs(5)).await;
    // (LinkedIn's and Pinterest's jobs run side by side, in either order.)
    let mut deleted = platforms.deleted();
    deleted.sort();
    assert_eq!(
        deleted,
        vec![
            ("linkedin", urn.clone()),
            ("pinterest", pin.clone()),
            ("youtube", video_id.clone()),
        ]
    );
    let seen = platforms.seen();
    let deletes: Vec<_> = seen.iter().filter(|s| s.method == Method::DELETE).collect();
    assert_eq!(
        deletes.len(),
        3,
        "each post's deletion reached its platform once"
    );
    let bearer = format!("Bearer {ACCESS}");
    let to = |tail: &str| *deletes.iter().find(|d| d.uri.ends_with(tail)).unwrap();
    to(&format!("/youtube/v3/videos?id={video_id}"));
    to(&format!("/v5/pins/{pin}"));
    let linkedin = to(&format!("/rest/posts/{}", urn.replace(':', "%3A")));
    assert_eq!(linkedin.header("x-restli-method"), Some("DELETE"));
    assert!(linkedin.header("linkedin-version").is_some());
    assert!(deletes
        .iter()
        .all(|d| d.header("authorization") == Some(bearer.as_str()) && d.body_len == 0));

    // One `media.post.deleted` per post, with the id it had; the item settled only once.
    let events = deleted_events(&app).await;
    assert_eq!(events.len(), 3);
    assert_eq!(events[0]["post"]["platform"], "youtube");
    assert_eq!(events[0]["post"]["status"], "deleted");
    assert_eq!(events[0]["post"]["postId"], video_id.as_str());
    assert_eq!(events[0]["post"]["accountId"], "UC-studio");
    assert_eq!(events[2]["media"]["pinterest"]["status"], "deleted");
    let completed = app.store.list_events(None, 10_000).await.unwrap();
    let completed = completed
        .iter()
        .filter(|e| e.event_type == xf_core::model::EventType::MediaCompleted)
        .count();
    assert_eq!(completed, 1);
    // The month's meters count each post once published and once deleted.
    let usage = app.get("/media/usage", &org.key).await.expect(200).clone();
    let posts = (&usage["postsPublished"], &usage["postsDeleted"]);
    assert_eq!(posts, (&json!(3), &json!(3)), "{usage}");
    assert_eq!(usage["uploads"], 1);
    assert_eq!(usage["bytes"], clip.len());

    // What names no post is not found: a platform that is none, one not selected, an
    // account the item does not post to, another organization's item, the wrong kind.
    for missing in [
        format!("{path}/posts/myspace"),
        format!("{path}/posts/tiktok"),
        format!("{path}/posts/linkedin?account=urn%3Ali%3Aperson%3Aother"),
        format!("/media/images/{id}/posts/linkedin"),
        "/media/videos/med_nope/posts/youtube".to_owned(),
    ] {
        delete_at(&app, &org.key, &missing)
            .await
            .expect_error(404, "not_found");
    }
    let other = studio(&app).await;
    delete_at(&app, &other.key, &format!("{path}/posts/youtube"))
        .await
        .expect_error(404, "not_found");
    // Empty, blank or not visible ASCII: no account id looks like that.
    for account in ["", "%0B", "%20", "caf%C3%A9"] {
        let query = format!("{path}/posts/linkedin?account={account}");
        delete_at(&app, &org.key, &query)
            .await
            .expect_error(400, "validation_error");
    }
    // Its posts deleted, the item itself can go.
    delete_at(&app, &org.key, &path).await.expect(200);
}

async fn a_deletion_the_platform_refuses_leaves_the_post_published(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("pinterest", "pin-user", 24 * 60)]).await;
    let photo = image("jpg", 1000, 1500);
    let id = upload_image(
        &app,
        &org,
        &photo,
        &[
            ("platforms", r#"["pinterest"]"#),
            ("pinterestBoardId", "board-9"),
        ],
    )
    .await;
    let workers = workers(&app);
    wait_for_image(&app, &org.key, &id, "completed").await;
    let path = format!("/media/images/{id}");
    platforms.fail_next(
        Route::PinterestDelete,
        Failure::Answer(
            403,
            json!({"code": 3, "message": "Not authorized to delete this Pin."}),
            None,
        ),
    );
    delete_at(&app, &org.key, &format!("{path}/posts/pinterest"))
        .await
        .expect(202);
    let shown = wait_at(&app, &org.key, &path, |i| {
        i["pinterest"]["posts"][0]["status"] == "published"
            && i["pinterest"]["error"].as_str().is_some()
    })
    .await;
    let error = shown["pinterest"]["posts"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("not deleted from Pinterest") && error.contains("3: Not authorized"),
        "{error}"
    );
    assert_eq!(shown["status"], "completed");
    assert!(platforms.deleted().is_empty());
    assert!(deleted_events(&app).await.is_empty());
    // Back to `published` is no new post: no second event, no second count.
    let published = app.store.list_events(None, 10_000).await.unwrap();
    let published = published
        .iter()
        .filter(|e| e.event_type == xf_core::model::EventType::MediaPostPublished)
        .count();
    assert_eq!(published, 1);
    let usage = app.get("/media/usage", &org.key).await.expect(200).clone();
    assert_eq!(
        (&usage["postsPublished"], &usage["postsDeleted"]),
        (&json!(1), &json!(0))
    );

    // Asked again, it goes.
    delete_at(&app, &org.key, &format!("{path}/posts/pinterest"))
        .await
        .expect(202);
    let shown = wait_at(&app, &org.key, &path, |i| {
        i["pinterest"]["status"] == "deleted"
    })
    .await;
    assert_eq!(shown["pinterest"]["posts"][0]["error"], Value::Null);
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(platforms.deleted().len(), 1);
    assert_eq!(deleted_events(&app).await.len(), 1);
    let usage = app.get("/media/usage", &org.key).await.expect(200).clone();
    assert_eq!(
        (&usage["postsPublished"], &usage["postsDeleted"]),
        (&json!(1), &json!(1))
    );
}

async fn posts_that_cannot_be_deleted_are_refused_with_the_reason(app: TestApp) {
    let (app, platforms, org) = studio_connected(
        app,
        &[
            ("youtube", "UC-studio", 24 * 60),
            ("instagram", "17841400000000001", 24 * 60),
            ("tiktok", "tt-creator", 24 * 60),
        ],
    )
    .await;
    let at = serde_json::to_value(app.xf.now().plus(chrono::Duration::minutes(30))).unwrap();
    let clip = video("mp4", 1080, 1920, 5, true, 0);
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube", "instagram", "tiktok"]"#),
            ("scheduledAt", at.as_str().unwrap()),
        ],
    )
    .await;
    let path = format!("/media/videos/{id}");
    for (platform, rule) in [
        ("instagram", "Instagram's Graph API has no way to delete"),
        ("tiktok", "TikTok's Content Posting API cannot delete"),
    ] {
        let reply = delete_at(&app, &org.key, &format!("{path}/posts/{platform}")).await;
        reply.expect_error(409, "conflict");
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(rule), "{message}");
    }
    // Not published yet: nothing to delete, and it can still be cancelled.
    let reply = delete_at(&app, &org.key, &format!("{path}/posts/youtube")).await;
    reply.expect_error(409, "conflict");
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("youtube account UC-studio is idle, not published")
            && message.contains("cancel"),
        "{message}"
    );
    let shown = item(&app, &org.key, &id).await;
    assert_eq!(shown["status"], "scheduled");
    assert_eq!(shown["youtube"]["posts"][0]["status"], "idle");
    assert!(platforms.seen().iter().all(|s| s.method != Method::DELETE));
}

async fn covers_reach_each_platform_in_its_documented_shape(app: TestApp) {
    let (app, platforms, org) = studio_connected(
        app,
        &[
            ("instagram", "17841400000000001", 60),
            ("tiktok", "tt-creator", 60),
            ("pinterest", "pin-user", 60),
        ],
    )
    .await;
    let clip = video("mp4", 640, 360, 5, true, 0);
    // A cover past the video's end is refused before anything is stored.
    let late = upload(
        &app,
        &org.key,
        "/media/videos",
        &[
            ("platforms", r#"["instagram"]"#),
            ("instagramCoverTimestampMs", "60000"),
        ],
        Some(("launch.mp4", &clip)),
    )
    .await;
    late.expect_error(400, "validation_error");
    assert_eq!(
        late.body["error"]["details"][0]["field"],
        "instagram.coverTimestampMs"
    );
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["instagram", "tiktok", "pinterest"]"#),
            ("instagram", r#"{"coverTimestampMs": 2500}"#),
            (
                "tiktok",
                r#"{"coverTimestampMs": 2500, "privacy": "SELF_ONLY"}"#,
            ),
            (
                "pinterest",
                r#"{"coverTimestampMs": 2500, "boardId": "board-9"}"#,
            ),
        ],
    )
    .await;
    let workers = workers(&app);
    let shown = wait_for(&app, &org.key, &id, |i| i["status"] == "completed").await;
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(shown["instagram"]["settings"]["coverTimestampMs"], 2500);
    let seen = platforms.seen();
    let container = seen
        .iter()
        .find(|s| s.method == Method::POST && s.uri.ends_with("/17841400000000001/media"))
        .unwrap();
    let form: Vec<(String, String)> = url::form_urlencoded::parse(container.text.as_bytes())
        .into_owned()
        .collect();
    assert!(
        form.contains(&("thumb_offset".to_owned(), "2500".to_owned())),
        "{form:?}"
    );
    let init = seen
        .iter()
        .find(|s| s.uri.ends_with("/v2/post/publish/video/init/"))
        .unwrap();
    let init: Value = serde_json::from_str(&init.text).unwrap();
    assert_eq!(init["post_info"]["video_cover_timestamp_ms"], 2500);
    let pin = seen.iter().find(|s| s.uri.ends_with("/v5/pins")).unwrap();
    let pin: Value = serde_json::from_str(&pin.text).unwrap();
    assert_eq!(pin["media_source"]["cover_image_key_frame_time"], 2);
}

pub(crate) async fn first_comments_are_posted_once_and_never_fail_the_post(app: TestApp) {
    let (app, platforms, org) = studio_connected(
        app,
        &[
            ("youtube", "UC-studio", 24 * 60),
            ("instagram", "17841400000000001", 24 * 60),
            ("linkedin", "urn:li:organization:42", 24 * 60),
        ],
    )
    .await;
    let clip = video("mp4", 640, 360, 5, true, 0);
    let said = "Links (and #launch notes) here: https://example.com/a_b";
    let nested = json!({"firstComment": said}).to_string();
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube", "instagram", "linkedin"]"#),
            ("youtube", nested.as_str()),
            ("instagramFirstComment", said),
            ("linkedin", nested.as_str()),
        ],
    )
    .await;
    let workers = workers(&app);
    let posted = |i: &Value| {
        ["youtube", "instagram", "linkedin"]
            .iter()
            .all(|p| i[p]["posts"][0]["firstComment"]["status"] == "done")
    };
    let shown = wait_for(&app, &org.key, &id, posted).await;
    assert_eq!(shown["status"], "completed");
    let comments = platforms.comments();
    assert_eq!(comments.len(), 3, "{comments:?}");
    for (platform, post, text) in &comments {
        let key = match *platform {
            "youtube" => "videoId",
            "instagram" => "mediaId",
            _ => "urn",
        };
        assert_eq!(shown[*platform][key], post.as_str(), "{platform}");
        // LinkedIn shows the little text as written: everything was escaped but the hashtag.
        assert_eq!(text, said, "{platform}");
        let comment = &shown[*platform]["posts"][0]["firstComment"];
        assert!(comment["id"].as_str().is_some(), "{comment}");
        assert_eq!(comment["error"], Value::Null);
    }

    // A refused comment is reported on its post, which stays published; a comment whose answer
    // is lost is not sent again.
    platforms.fail_next(
        Route::Comment,
        Failure::Answer(
            403,
            json!({"error": {"code": 403, "message": "The comment cannot be created.",
                "errors": [{"reason": "forbidden"}]}}),
            None,
        ),
    );
    let refused = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube"]"#),
            ("youtubeFirstComment", "First!"),
        ],
    )
    .await;
    let shown = wait_for(&app, &org.key, &refused, |i| {
        i["youtube"]["posts"][0]["firstComment"]["status"] == "failed"
    })
    .await;
    assert_eq!(shown["status"], "completed");
    assert_eq!(shown["youtube"]["status"], "published");
    let error = shown["youtube"]["posts"][0]["firstComment"]["error"]
        .as_str()
        .unwrap();
    assert!(error.contains("forbidden"), "{error}");
    platforms.fail_next(
        Route::Comment,
        Failure::ActThenStall(Duration::from_secs(5)),
    );
    let lost = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube"]"#),
            ("youtubeFirstComment", "Second!"),
        ],
    )
    .await;
    let shown = wait_for(&app, &org.key, &lost, |i| {
        i["youtube"]["posts"][0]["firstComment"]["status"] == "failed"
    })
    .await;
    let error = shown["youtube"]["posts"][0]["firstComment"]["error"]
        .as_str()
        .unwrap();
    assert!(error.contains("not sent again"), "{error}");
    workers.shutdown(Duration::from_secs(5)).await;
    let seconds: Vec<_> = platforms
        .comments()
        .into_iter()
        .filter(|(_, _, text)| text == "Second!")
        .collect();
    assert_eq!(
        seconds.len(),
        1,
        "the lost comment was made once, and not sent again"
    );
    assert_eq!(
        item(&app, &org.key, &lost).await["youtube"]["status"],
        "published"
    );

    // Too long for the platform: refused at upload, naming the setting.
    let long = "x".repeat(1_251);
    let reply = upload(
        &app,
        &org.key,
        "/media/videos",
        &[
            ("platforms", r#"["linkedin"]"#),
            ("linkedinFirstComment", long.as_str()),
        ],
        Some(("launch.mp4", &clip)),
    )
    .await;
    reply.expect_error(400, "validation_error");
    assert_eq!(
        reply.body["error"]["details"][0]["field"],
        "linkedinFirstComment"
    );
}

async fn a_first_comment_cut_off_by_a_crash_is_not_sent_again(app: TestApp) {
    let (app, platforms, org) = studio_connected(app, &[("youtube", "UC-studio", 24 * 60)]).await;
    let clip = video("mp4", 640, 360, 4, false, 0);
    // The process dies while the comment's call is out.
    let held = platforms.hold(Route::Comment, false);
    let id = post_video(
        &app,
        &org,
        &clip,
        &[
            ("platforms", r#"["youtube"]"#),
            ("youtubeFirstComment", "Hello"),
        ],
    )
    .await;
    let crashed = workers(&app);
    held.arrived().await;
    let shown = item(&app, &org.key, &id).await;
    assert_eq!(shown["youtube"]["posts"][0]["status"], "published");
    assert_eq!(
        shown["youtube"]["posts"][0]["firstComment"]["status"],
        "sending"
    );
    drop(crashed);

    // Another process takes the job up once its lease ran out: the post is published, and the
    // comment, whose outcome is not known, is reported and not sent again.
    let workers = workers(&app);
    app.clock.advance(chrono::Duration::seconds(31));
    let shown = wait_for(&app, &org.key, &id, |i| {
        i["youtube"]["posts"][0]["firstComment"]["status"] == "failed"
    })
    .await;
    workers.shutdown(Duration::from_secs(5)).await;
    let error = shown["youtube"]["posts"][0]["firstComment"]["error"]
        .as_str()
        .unwrap();
    assert!(error.contains("worker stopped"), "{error}");
    assert_eq!(shown["status"], "completed");
    let calls = platforms
        .seen()
        .iter()
        .filter(|s| s.uri.contains("/commentThreads"))
        .count();
    assert_eq!(calls, 1, "the comment was sent once");
    assert_eq!(platforms.videos().len(), 1);
}

pub(crate) async fn a_custom_thumbnail_is_set_on_youtube_after_the_video(app: TestApp) {
    let files = Scratch::new();
    let blobs = Arc::new(xf_core::media::blob::LocalBlobStore::new(files.path()).unwrap());
    let store: Arc<dyn xf_core::media::blob::BlobStore> = blobs.clone();
    let (app, platforms) = publishing_with(app, |builder| builder.blob_store(store)).await;
    platforms.grant(ACCESS, None);
    let org = studio(&app).await;
    connect(&app, &org, "youtube", "UC-studio", 24 * 60).await;
    connect(&app, &org, "tiktok", "tt-creator", 24 * 60).await;
    let clip = video("mp4", 640, 360, 4, false, 0);
    let cover = image("jpg", 1280, 720);
    let youtube = [("platforms", r#"["youtube"]"#)];

    // Refused, each naming the part: not a JPEG or PNG by name or by content, no YouTube
    // among the platforms, twice.
    let png_named_jpg = image("png", 64, 64);
    type Form<'a> = (&'a [(&'a str, &'a str)], Vec<(&'a str, &'a str, &'a [u8])>);
    let refusals: [Form<'_>; 4] = [
        (
            &youtube,
            vec![("file", "a.mp4", &clip), ("thumbnail", "cover.gif", &cover)],
        ),
        (
            &youtube,
            vec![
                ("file", "a.mp4", &clip),
                ("thumbnail", "cover.jpg", &png_named_jpg),
            ],
        ),
        (
            &[("platforms", r#"["tiktok"]"#)],
            vec![("file", "a.mp4", &clip), ("thumbnail", "cover.jpg", &cover)],
        ),
        (
            &youtube,
            vec![
                ("file", "a.mp4", &clip),
                ("thumbnail", "cover.jpg", &cover),
                ("thumbnail", "cover.jpg", &cover),
            ],
        ),
    ];
    for (fields, parts) in &refusals {
        let reply = upload_files(&app, &org.key, "/media/videos", fields, parts, None).await;
        reply.expect_error(400, "validation_error");
        assert_eq!(
            reply.body["error"]["details"][0]["field"], "thumbnail",
            "{}",
            reply.body
        );
    }
    let huge = vec![0xFFu8; (2 << 20) + 1];
    let parts: [(&str, &str, &[u8]); 2] =
        [("file", "a.mp4", &clip), ("thumbnail", "cover.jpg", &huge)];
    let reply = upload_files(&app, &org.key, "/media/videos", &youtube, &parts, None).await;
    reply.expect_error(413, "payload_too_large");
    // Nothing of the refused forms stayed in the blob store.
    let left = std::fs::read_dir(files.path().join("media"))
        .map(|dirs| {
            dirs.flatten()
                .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten())
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0, "refused forms leave no blob");

    let parts: [(&str, &str, &[u8]); 2] =
        [("file", "a.mp4", &clip), ("thumbnail", "cover.jpg", &cover)];
    let reply = upload_files(&app, &org.key, "/media/videos", &youtube, &parts, None).await;
    let id = reply.expect(201)[0]["id"].as_str().unwrap().to_owned();
    let shown = item(&app, &org.key, &id).await;
    assert_eq!(shown["thumbnail"]["name"], "cover.jpg");
    assert_eq!(shown["thumbnail"]["format"], "jpeg");
    assert_eq!(shown["thumbnail"]["width"], 1280);
    let workers = workers(&app);
    let shown = wait_for(&app, &org.key, &id, |i| {
        i["youtube"]["posts"][0]["thumbnail"]["status"] == "done"
    })
    .await;
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(shown["status"], "completed");
    let set = platforms.thumbnails();
    assert_eq!(set.len(), 1);
    assert_eq!(set[0].0, shown["youtube"]["videoId"].as_str().unwrap());
    assert_eq!(set[0].1, "image/jpeg");
    assert_eq!(set[0].2, cover, "the thumbnail's bytes as uploaded");
    // The item's delete takes its thumbnail's blob with its file.
    let key = {
        let stored = app
            .store
            .get_media(&xf_core::ids::MediaId::parse(&id).unwrap())
            .await
            .unwrap()
            .unwrap();
        stored.targets[&xf_core::media::Platform::Youtube]
            .thumbnail
            .clone()
            .unwrap()
            .key
    };
    assert!(app
        .store
        .blob_keys_in_use(std::slice::from_ref(&key))
        .await
        .unwrap()
        .contains(&key));
    delete_at(&app, &org.key, &format!("/media/videos/{id}"))
        .await
        .expect(200);
    use xf_core::media::blob::BlobStore;
    assert!(blobs.open(&key).await.is_err(), "the thumbnail is gone");
}

/// A directory of its own under the system's temporary one, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!("xf-test-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An image upload with three `file` parts is one carousel post on each platform that takes
/// them, each sent the three images in order, once: Instagram (a container per image, then
/// the carousel's, published), LinkedIn (three image uploads, one `multiImage` post),
/// Pinterest (a `multiple_image_urls` pin) and TikTok (one photo post of three photos).
pub(crate) async fn a_carousel_of_three_images_is_one_post_on_each_platform(app: TestApp) {
    let (app, platforms, org) = studio_connected(
        app,
        &[
            ("instagram", "17841400000000001", 24 * 60),
            ("linkedin", "urn:li:organization:42", 24 * 60),
            ("pinterest", "pin-user", 24 * 60),
            ("tiktok", "tt-creator", 24 * 60),
        ],
    )
    .await;
    let images = carousel_jpegs();
    let files: Vec<(&str, &str, &[u8])> = ["one.jpg", "two.jpg", "three.jpg"]
        .iter()
        .zip(&images)
        .map(|(name, bytes)| ("file", *name, bytes.as_slice()))
        .collect();
    let fields = [
        (
            "platforms",
            r#"["instagram","linkedin","pinterest","tiktok"]"#,
        ),
        ("description", "Three looks"),
        ("pinterestBoardId", "board-9"),
    ];
    let reply = upload_files(&app, &org.key, "/media/images", &fields, &files, None).await;
    let id = reply.expect(201)[0]["id"].as_str().unwrap().to_owned();
    let workers = workers(&app);
    let shown = wait_for_image(&app, &org.key, &id, "completed").await;
    let sizes: Vec<usize> = images.iter().map(Vec::len).collect();
    let carousels = platforms.carousels();
    for platform in ["instagram", "linkedin", "pinterest", "tiktok"] {
        assert_eq!(
            shown[platform]["status"], "published",
            "{platform}: {shown}"
        );
        let posted: Vec<_> = carousels
            .iter()
            .filter(|(p, _, _)| *p == platform)
            .collect();
        assert_eq!(
            posted.len(),
            1,
            "{platform}: one carousel post, {carousels:?}"
        );
        assert_eq!(posted[0].2, sizes, "{platform}: the three images, in order");
    }
    let id_of = |platform: &str| {
        carousels
            .iter()
            .find(|(p, _, _)| *p == platform)
            .map(|(_, id, _)| id.clone())
            .unwrap()
    };
    assert_eq!(shown["instagram"]["mediaId"], id_of("instagram"));
    assert_eq!(shown["linkedin"]["urn"], id_of("linkedin"));
    assert_eq!(shown["pinterest"]["pinId"], id_of("pinterest"));
    // Nothing else was posted: no image went out on its own.
    assert_eq!(platforms.instagram_media().len(), 1);
    assert_eq!(platforms.linkedin_posts().len(), 1);
    assert_eq!(platforms.pins().len(), 1);
    assert_eq!(platforms.tiktok_posts().len(), 1);
    let seen = platforms.seen();
    let body_of = |suffix: &str| -> Value {
        let request = seen.iter().find(|s| s.uri.ends_with(suffix)).unwrap();
        serde_json::from_str(&request.text).unwrap()
    };
    let post = body_of("/rest/posts");
    assert_eq!(
        post["content"]["multiImage"]["images"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    assert_eq!(post["commentary"], "Three looks");
    let pin = body_of("/v5/pins");
    assert_eq!(pin["media_source"]["source_type"], "multiple_image_urls");
    let photo = body_of("/v2/post/publish/content/init/");
    assert_eq!(photo["media_type"], "PHOTO");
    assert_eq!(
        photo["source_info"]["photo_images"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    let containers = seen
        .iter()
        .filter(|s| s.uri.ends_with("/17841400000000001/media") && s.method == Method::POST)
        .count();
    assert_eq!(containers, 4, "three image containers and the carousel's");
    // The month's meters: one upload of three images, four posts.
    let usage = app.get("/media/usage", &org.key).await.expect(200).clone();
    assert_eq!(usage["uploads"], 1, "{usage}");
    assert_eq!(usage["bytes"], sizes.iter().sum::<usize>());
    assert_eq!(usage["postsPublished"], 4);
    assert_eq!(usage["postsDeleted"], 0);
    assert_eq!(usage["period"], app.xf.now().month_key());
    workers.shutdown(Duration::from_secs(5)).await;
}

/// A carousel whose second image fails (Instagram's second container, LinkedIn's second
/// upload) goes on from there when retried: no container made twice, no image uploaded twice,
/// one post each of the three images in order.
async fn an_interrupted_carousel_goes_on_from_the_image_it_stopped_at(app: TestApp) {
    let (app, platforms, org) = studio_connected(
        app,
        &[
            ("instagram", "17841400000000001", 24 * 60),
            ("linkedin", "urn:li:organization:42", 24 * 60),
        ],
    )
    .await;
    let images = carousel_jpegs();
    let files: Vec<(&str, &str, &[u8])> = images
        .iter()
        .map(|bytes| ("file", "look.jpg", bytes.as_slice()))
        .collect();
    // The first container and the first upload are made; the next of each fails.
    let container = platforms.hold(Route::InstagramContainer, true);
    let part = platforms.hold(Route::LinkedinPart, true);
    let fields = [("platforms", r#"["instagram","linkedin"]"#)];
    let reply = upload_files(&app, &org.key, "/media/images", &fields, &files, None).await;
    let id = reply.expect(201)[0]["id"].as_str().unwrap().to_owned();
    let workers = workers(&app);
    container.arrived().await;
    part.arrived().await;
    platforms.fail_next(
        Route::InstagramContainer,
        Failure::Answer(
            500,
            json!({"error": {"message": "An unexpected error has occurred", "code": 2}}),
            None,
        ),
    );
    platforms.fail_next(
        Route::LinkedinPart,
        Failure::Answer(
            503,
            json!({"status": 503, "message": "Service Unavailable"}),
            None,
        ),
    );
    container.release();
    part.release();
    for platform in ["instagram", "linkedin"] {
        wait_at(&app, &org.key, &format!("/media/images/{id}"), |i| {
            i[platform]["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("will try again"))
        })
        .await;
        retry_of(&app, &id, platform).await;
    }
    app.clock.advance(chrono::Duration::seconds(60));
    let shown = wait_for_image(&app, &org.key, &id, "completed").await;
    let sizes: Vec<usize> = images.iter().map(Vec::len).collect();
    for platform in ["instagram", "linkedin"] {
        assert_eq!(shown[platform]["status"], "published", "{shown}");
        let posted: Vec<_> = platforms
            .carousels()
            .into_iter()
            .filter(|(p, _, _)| *p == platform)
            .collect();
        assert_eq!(posted.len(), 1, "{platform}");
        assert_eq!(posted[0].2, sizes, "{platform}");
    }
    let seen = platforms.seen();
    let count = |method: Method, test: &dyn Fn(&str) -> bool| {
        seen.iter()
            .filter(|s| s.method == method && test(&s.uri))
            .count()
    };
    // Instagram: the first child, the refused second, the second and third, the carousel.
    let containers = count(Method::POST, &|uri| {
        uri.ends_with("/17841400000000001/media")
    });
    assert_eq!(containers, 5);
    // LinkedIn: three images initialized once each; four uploads, the refused one retried.
    let initialized = count(Method::POST, &|uri| {
        uri.contains("/rest/images?action=initializeUpload")
    });
    assert_eq!(initialized, 3);
    assert_eq!(count(Method::PUT, &|_| true), 4);
    workers.shutdown(Duration::from_secs(5)).await;
}
