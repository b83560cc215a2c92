//! Every field an answer always has is required in the served documents: scenarios of the
//! other modules run on recording apps, and each success answer is held to its operation's
//! schema (`xf_tests::answers`).

use http::Method;
use serde_json::{json, Value};
use xf_tests::{request, Recorder, TestApp};

/// Runs scenarios, each on a fresh in-memory app recording into `recorder`.
macro_rules! scenarios {
    ($recorder:expr, $($module:ident :: $name:ident),* $(,)?) => {
        $(
            crate::$module::$name(TestApp::memory().await.recording($recorder)).await;
        )*
    };
}

/// Operations no scenario answers, and why.
const UNANSWERED: &[&str] = &[];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_field_present_in_every_answer_is_required() {
    let recorder = Recorder::default();
    scenarios!(
        &recorder,
        basics::health_is_public_and_shaped,
        basics::organization_overview,
        basics::admin_api_requires_its_token,
        properties::create_property_shape_and_normalisation,
        properties::get_property_with_includes,
        properties::issues_list_filters_and_summary,
        jobs::jobs_list_filter_and_detail,
        jobs::cancel_pending_and_processing_only,
        scans::scan_and_crawl_queue_pending_jobs,
        scans::batch_items_succeed_or_fail_separately,
        reports::reports_list_detail_expiry_and_views,
        reports::usage_limits_and_rate_limit_counters,
        gsc::sync_fetches_every_page_and_serves_the_snapshot,
        gsc::crawl_correlation_joins_the_latest_completed_scan,
        gsc::portfolio_sums_linked_properties_and_counts_stale_ones,
        gsc::admin_links_accounts_and_sites,
        gsc::revoked_grant_is_shown_until_linked_again,
        history::the_history_lists_every_scan_of_the_property,
        history::the_issue_list_takes_check_severity_and_address_filters,
        schedules::a_schedule_is_set_read_and_deleted,
        webhooks::webhook_lifecycle_and_shapes,
        webhooks::test_deliveries_are_signed_sent_and_logged,
        webhooks::a_rotation_signs_with_both_secrets_for_24_hours,
        webhooks::the_delivery_log_pages_newest_first,
        media::video_upload_reads_the_file_and_plans_each_platform,
        media::images_of_each_format_are_read,
        media::lists_page_and_filter_newest_first,
        media::a_carousel_is_stored_in_order_and_checked_per_platform,
        media::an_image_without_platforms_is_settled_at_once,
        media::keys_plans_envelopes_and_tenants,
        publishing::youtube_publishes_in_chunks_and_reports_each_stage,
        publishing::a_cancelled_schedule_never_publishes,
        publishing::a_rescheduled_item_publishes_at_the_new_time_not_the_old,
        publishing::deleting_an_item_stops_its_posts_and_removes_its_file,
        publishing::a_published_post_is_deleted_from_its_platform_once,
        publishing::a_refusal_fails_that_platform_only,
        publishing::a_custom_thumbnail_is_set_on_youtube_after_the_video,
        publishing::first_comments_are_posted_once_and_never_fail_the_post,
        publishing::pinterest_pins_videos_and_images_once,
        publishing::tokens_are_refreshed_and_a_revoked_grant_disconnects,
        publishing::a_carousel_of_three_images_is_one_post_on_each_platform,
        publishing::instagram_pulls_the_signed_url_and_publishes,
        publishing::tiktok_posts_in_chunks_sends_inbox_uploads_and_pulls_photos,
        publishing::linkedin_uploads_parts_as_instructed_then_posts,
        tus::a_chunked_upload_becomes_a_video,
        admin_reads::admin_lists_and_reads_organizations,
        admin_reads::admin_lists_keys_with_prefix_and_last_use,
        admin_reads::admin_lists_channels,
        runtime::a_queued_scan_runs_and_the_api_shows_its_result_and_activity,
    );
    configuration_leaves_out(&recorder).await;
    library(TestApp::memory().await.recording(&recorder)).await;
    google_links(TestApp::memory().await.recording(&recorder)).await;
    let app = TestApp::memory().await;
    let api = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await
        .body;
    let admin = app
        .send_admin(request(Method::GET, "/openapi.json", None, None, &[]))
        .await
        .body;
    let answers = recorder.lock().unwrap().clone();
    let findings = xf_tests::answers::check(&api, &admin, &answers);
    assert!(
        findings.checked > 300,
        "{} answers checked",
        findings.checked
    );
    let unanswered: Vec<&String> = findings
        .unanswered
        .iter()
        .filter(|operation| !UNANSWERED.contains(&operation.as_str()))
        .collect();
    assert!(
        findings.invalid.is_empty() && findings.loose.is_empty() && unanswered.is_empty(),
        "answers their schemas refuse:\n{}\n\nfields in every answer but not required:\n{}\n\n\
         operations no scenario answered:\n{unanswered:#?}",
        findings.invalid.join("\n"),
        findings.loose.join("\n"),
    );
}

/// What a host's configuration leaves out: `/health` without a status page (test apps have one).
async fn configuration_leaves_out(recorder: &Recorder) {
    let store = std::sync::Arc::new(xf_storage_memory::MemoryStore::new());
    let xf = xf_core::Xf::builder(store)
        .public_base_url("https://app.example.test")
        .secret_key(xf_tests::TEST_SECRET.to_vec())
        .build()
        .expect("a complete configuration");
    let response = tower::ServiceExt::oneshot(
        xf_tower::XfService::new(xf),
        request(Method::GET, "/health", None, None, &[]),
    )
    .await
    .unwrap_or_else(|never| match never {});
    let (parts, body) = response.into_parts();
    let body = http_body_util::BodyExt::collect(body)
        .await
        .unwrap()
        .to_bytes();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert!(body["data"].get("statusPage").is_none(), "{body}");
    recorder.lock().unwrap().push(xf_tests::Answer {
        service: xf_tests::Service::Api,
        method: Method::GET,
        path: "/health".to_owned(),
        status: parts.status,
        content_type: Some("application/json".to_owned()),
        body,
    });
}

/// A Pinterest channel given a default board, and an image pinned to it without a `boardId`.
async fn library(app: TestApp) {
    let media = app.organization("Library", "plus").await;
    let connected = app
        .admin(
            Method::POST,
            &format!("/organizations/{}/channels", media.organization.id),
            Some(json!({
                "platform": "pinterest",
                "accountId": "pin-1",
                "displayName": "Pins",
                "accessToken": "token",
            })),
        )
        .await;
    let channel = connected.expect(201)["channel"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.admin(
        Method::PATCH,
        &format!("/channels/{channel}"),
        Some(json!({"defaultBoard": "board-1"})),
    )
    .await
    .expect(200);
    let png = xf_tests::media::image("png", 16, 16);
    let uploaded = crate::media::upload(
        &app,
        &media.live_key,
        "/media/images",
        &[("platforms", r#"["pinterest"]"#)],
        Some(("pin.png", &png)),
    )
    .await;
    assert_eq!(uploaded.status.as_u16(), 201, "{}", uploaded.body);
    let id = uploaded.body["data"][0]["id"].as_str().unwrap().to_owned();
    let item = app
        .get(&format!("/media/images/{id}"), &media.live_key)
        .await;
    assert_eq!(item.status.as_u16(), 200, "{}", item.body);

    // A scheduled image is changed, then cancelled.
    let scheduled = crate::media::upload(
        &app,
        &media.live_key,
        "/media/images",
        &[
            ("platforms", r#"["pinterest"]"#),
            ("scheduledAt", "2030-01-01T00:00:00Z"),
        ],
        Some(("later.png", &png)),
    )
    .await;
    let id = scheduled.body["data"][0]["id"].as_str().unwrap().to_owned();
    let path = format!("/media/images/{id}");
    let changed = app
        .send(request(
            Method::PATCH,
            &path,
            Some(&media.live_key),
            Some(json!({"title": "Later"}).to_string()),
            &[],
        ))
        .await;
    assert_eq!(changed.status.as_u16(), 200, "{}", changed.body);
    let cancelled = app
        .post(&format!("{path}/cancel"), &media.live_key, json!({}))
        .await;
    assert_eq!(cancelled.status.as_u16(), 200, "{}", cancelled.body);
}

/// The admin API's Google reads and links: an organization's account linked, the sites it
/// sees, and a connect link.
async fn google_links(app: TestApp) {
    let google = xf_tests::google::GoogleStandIn::start().await;
    let config = xf_core::gsc::GoogleConfig {
        token_url: google.token_url(),
        authorize_url: google.authorize_url(),
        api_base_url: google.api_base_url(),
        ..xf_core::gsc::GoogleConfig::new(
            xf_tests::google::CLIENT_ID,
            xf_tests::google::CLIENT_SECRET,
        )
    };
    let app = app.reconfigured(|builder| builder.google(config));
    google.grant("1//refresh-of-linked", &["sc-domain:linked.example"]);
    let linked = crate::org(&app, "Linked").await;
    app.admin(
        Method::PUT,
        &format!("/organizations/{}/gsc", linked.id),
        Some(json!({"refreshToken": "1//refresh-of-linked"})),
    )
    .await
    .expect(200);
    let sites = app
        .admin(
            Method::GET,
            &format!("/organizations/{}/gsc/sites", linked.id),
            None,
        )
        .await;
    assert_eq!(
        sites.expect(200)["sites"][0]["siteUrl"],
        "sc-domain:linked.example"
    );
    app.admin(
        Method::POST,
        &format!("/organizations/{}/connect-links", linked.id),
        Some(json!({"provider": "google", "returnUrl": "https://app.example.test/settings"})),
    )
    .await
    .expect(201);
}
