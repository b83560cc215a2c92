//! Connect links end to end, over sockets: a real HTTP client opens the link and follows the
//! redirects, through the provider's stand-in consent screen and xf's callback, to the host
//! application's `returnUrl`; then the connected channel (or Google link) is used for real.
//! And every refused case: replayed, expired, forged or another organization's state or
//! channel, a `returnUrl` elsewhere, a user who declines, a grant with no usable account.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use http::StatusCode;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use xf_core::media::platforms;
use xf_core::time::ManualClock;
use xf_core::{NewOrganization, Xf};
use xf_tests::google::{Day, GoogleStandIn, Row, SiteData, CLIENT_ID, CLIENT_SECRET};
use xf_tests::platforms::PlatformStandIn;

const ADMIN_TOKEN: &str = "connect-test-admin-token";

/// The host application's page users come back to: it records each query it gets.
#[derive(Clone, Default)]
struct ReturnPage {
    queries: Arc<Mutex<Vec<String>>>,
}

/// xf served on a socket (all of it, with the admin API), the providers' stand-ins, and the
/// host application's return page.
struct World {
    xf: Xf,
    base: String,
    return_url: String,
    returned: ReturnPage,
    google: GoogleStandIn,
    platforms: PlatformStandIn,
    clock: Option<ManualClock>,
    /// The user's browser: it follows redirects and keeps cookies in `jar`.
    http: reqwest::Client,
    jar: Arc<reqwest::cookie::Jar>,
    _tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for World {
    fn drop(&mut self) {
        for task in &self._tasks {
            task.abort();
        }
    }
}

async fn serve(listener: TcpListener, app: axum::Router) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    })
}

async fn world(manual_clock: bool) -> World {
    let google = GoogleStandIn::start().await;
    let stand_in = PlatformStandIn::start().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address: SocketAddr = listener.local_addr().unwrap();
    let base = format!("http://{address}");
    let jar = Arc::new(reqwest::cookie::Jar::default());
    let clock = manual_clock
        .then(|| ManualClock::new(xf_core::time::Timestamp::from_datetime(chrono::Utc::now())));
    let mut builder = Xf::builder(Arc::new(xf_storage_memory::MemoryStore::new()))
        .secret_key(xf_tests::TEST_SECRET.to_vec())
        .public_base_url(base.clone())
        .google(xf_core::gsc::GoogleConfig {
            token_url: google.token_url(),
            authorize_url: google.authorize_url(),
            api_base_url: google.api_base_url(),
            ..xf_core::gsc::GoogleConfig::new(CLIENT_ID, CLIENT_SECRET)
        })
        .platform(Arc::new(platforms::youtube::Youtube::new(
            stand_in.youtube_config(),
        )))
        .platform(Arc::new(platforms::instagram::Instagram::new(
            stand_in.instagram_config(),
        )))
        .platform(Arc::new(platforms::tiktok::Tiktok::new(
            stand_in.tiktok_config(),
        )))
        .platform(Arc::new(platforms::linkedin::Linkedin::new(
            stand_in.linkedin_config(),
        )))
        .platform(Arc::new(platforms::pinterest::Pinterest::new(
            stand_in.pinterest_config(),
        )));
    if let Some(clock) = &clock {
        builder = builder.clock(Arc::new(clock.clone()));
    }
    let xf = builder.build().unwrap();
    let mounts = xf_tower::Mounts::new(xf.clone()).admin(ADMIN_TOKEN);
    let xf_task = tokio::spawn(async move {
        let _ = axum::serve(listener, axum::Router::new().fallback_service(mounts)).await;
    });

    let returned = ReturnPage::default();
    let page = axum::Router::new()
        .route(
            "/done",
            axum::routing::get(
                |State(page): State<ReturnPage>, RawQuery(query): RawQuery| async move {
                    page.queries.lock().unwrap().push(query.unwrap_or_default());
                    "back in the app"
                },
            ),
        )
        .with_state(returned.clone());
    let page_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let return_url = format!("http://{}/done", page_listener.local_addr().unwrap());
    let page_task = serve(page_listener, page).await;
    World {
        xf,
        base,
        return_url,
        returned,
        google,
        platforms: stand_in,
        clock,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(10))
            .cookie_provider(Arc::clone(&jar))
            .build()
            .unwrap(),
        jar,
        _tasks: vec![xf_task, page_task],
    }
}

impl World {
    /// A new organization on `plan` (`pro` for the media API, `growth` for the developer
    /// API): its id and live key.
    async fn organization(&self, name: &str, plan: &str) -> (String, String) {
        let created = self
            .xf
            .admin()
            .create_organization(NewOrganization {
                name: name.into(),
                plan: plan.into(),
                shop_domain: None,
            })
            .await
            .unwrap();
        (created.organization.id.to_string(), created.live_key)
    }

    /// `POST /admin/organizations/{org}/connect-links`: status and body.
    async fn create_link(&self, org: &str, body: Value) -> (StatusCode, Value) {
        let response = self
            .http
            .post(format!(
                "{}/admin/organizations/{org}/connect-links",
                self.base
            ))
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        (response.status(), response.json().await.unwrap())
    }

    /// A connect link for `provider` back to the return page.
    async fn link(&self, org: &str, provider: &str) -> String {
        let (status, body) = self
            .create_link(
                org,
                json!({"provider": provider, "returnUrl": self.return_url}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["data"]["connectLink"]["url"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Opens `link` and follows every redirect: the query the return page got.
    async fn follow(&self, link: &str) -> Vec<(String, String)> {
        let response = self.http.get(link).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{}", response.url());
        assert_eq!(response.text().await.unwrap(), "back in the app");
        let query = self
            .returned
            .queries
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap();
        form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    /// One step without following, in the same browser (the cookie jar of `http`): the
    /// status and `Location`.
    async fn step(&self, url: &str) -> (StatusCode, String) {
        self.step_in(Arc::clone(&self.jar), url).await
    }

    /// One step without following, in the browser of `jar`.
    async fn step_in(&self, jar: Arc<reqwest::cookie::Jar>, url: &str) -> (StatusCode, String) {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .cookie_provider(jar)
            .build()
            .unwrap();
        let response = client.get(url).send().await.unwrap();
        let location = response
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (response.status(), location)
    }

    /// The background runtime over this world's xf (polling every 20 ms).
    fn workers(&self) -> xf_core::runtime::WorkerHandle {
        self.xf.spawn_workers(
            xf_core::runtime::WorkerOptions::new().poll_interval(Duration::from_millis(20)),
        )
    }

    /// `POST /api/v1/media/videos` with the form `fields` and `clip`: the answer.
    async fn upload_video(&self, key: &str, fields: &[(&str, &str)], clip: &[u8]) -> Value {
        let (content_type, body) = xf_tests::media::multipart(fields, Some(("clip.mp4", clip)));
        self.http
            .post(format!("{}/api/v1/media/videos", self.base))
            .header("x-api-key", key)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Uploads `clip` with `fields`, and waits (12 s at most) for the item to be `completed` or
    /// `failed`: its view then.
    async fn publish(&self, key: &str, fields: &[(&str, &str)], clip: &[u8]) -> Value {
        let uploaded = self.upload_video(key, fields, clip).await;
        let id = uploaded["data"][0]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{uploaded}"))
            .to_owned();
        let mut shown = Value::Null;
        for _ in 0..300 {
            shown = self.api(key, &format!("/media/videos/{id}")).await;
            if shown["data"]["status"] == "completed" || shown["data"]["status"] == "failed" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        shown
    }

    /// `GET {base}{path}` with the media API's key.
    async fn api(&self, key: &str, path: &str) -> Value {
        let response = self
            .http
            .get(format!("{}/api/v1{path}", self.base))
            .header("x-api-key", key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.unwrap()
    }
}

fn get<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// YouTube: the link leads through Google's consent screen back to the app, with the new
/// channel; the channel is listed, and a video published to it goes out with its tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_youtube_channel_connected_by_link_lists_and_publishes() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;
    world.platforms.consent(
        "youtube",
        "ya29.connected",
        Some("1//connected"),
        &[("UC-connected", "Connected Studio")],
    );
    let link = world.link(&org, "youtube").await;
    assert!(
        link.starts_with(&format!("{}/connect/", world.base)),
        "{link}"
    );

    let back = world.follow(&link).await;
    assert_eq!(get(&back, "status"), Some("connected"), "{back:?}");
    assert_eq!(get(&back, "provider"), Some("youtube"));
    let channel_id = get(&back, "channels").unwrap().to_owned();
    assert!(channel_id.starts_with("ch_"), "{channel_id}");

    let asked = world.platforms.authorization_requests("youtube");
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0]["redirect_uri"],
        format!("{}/connect/callback", world.base)
    );
    assert_eq!(asked[0]["prompt"], "consent");

    let channels = world.api(&key, "/channels").await;
    let listed = channels["data"]["youtube"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{channels}");
    assert_eq!(listed[0]["id"], channel_id.as_str());

    // A video published to it goes out with the connected tokens.
    let workers = world.workers();
    let clip = xf_tests::media::video("mp4", 640, 360, 4, false, 0);
    let shown = world
        .publish(&key, &[("platforms", r#"["youtube"]"#)], &clip)
        .await;
    assert_eq!(shown["data"]["youtube"]["status"], "published", "{shown}");
    assert_eq!(world.platforms.videos().len(), 1);
    workers.shutdown(Duration::from_secs(5)).await;
}

/// Google: the link connects the organization's Google account, and a sync of a property
/// mapped to one of its sites reads Search Console with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_google_account_connected_by_link_syncs_search_console() {
    let world = world(false).await;
    let (org, key) = world.organization("Acme", "growth").await;
    let site = "sc-domain:acme.example";
    world.google.grant("1//gsc-connected", &[site]);
    world.google.sign_in("1//gsc-connected");
    let today = chrono::Utc::now().date_naive();
    world.google.set_site(
        site,
        SiteData {
            days: vec![Day {
                date: today - chrono::Duration::days(3),
                clicks: 9,
                impressions: 90,
                position: 3.0,
            }],
            queries: vec![Row {
                key: "acme".into(),
                clicks: 9,
                impressions: 90,
                position: 3.0,
            }],
            pages: Vec::new(),
        },
    );
    let back = world.follow(&world.link(&org, "google").await).await;
    assert_eq!(get(&back, "status"), Some("connected"), "{back:?}");
    assert_eq!(get(&back, "sites"), Some("1"));
    let asked = &world.google.authorization_requests()[0];
    assert_eq!(asked["code_challenge_method"], "S256");
    assert_eq!(asked["access_type"], "offline");

    // The host lists the sites the account reads, to map a property without typing them.
    let sites: Value = world
        .http
        .get(format!(
            "{}/admin/organizations/{org}/gsc/sites",
            world.base
        ))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        sites["data"]["sites"],
        json!([{"siteUrl": site, "permissionLevel": "siteOwner"}]),
        "{sites}"
    );

    let property = world
        .http
        .post(format!("{}/api/v1/properties", world.base))
        .bearer_auth(&key)
        .json(&json!({"url": "https://acme.example"}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["data"]["property"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mapped = world
        .http
        .put(format!("{}/admin/properties/{property}/gsc", world.base))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"siteUrl": site}))
        .send()
        .await
        .unwrap();
    assert_eq!(mapped.status(), StatusCode::OK);
    let synced = world
        .http
        .post(format!(
            "{}/api/v1/properties/{property}/gsc/sync",
            world.base
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(synced.status(), StatusCode::ACCEPTED);
    let overview: Value = world
        .http
        .get(format!(
            "{}/api/v1/properties/{property}/gsc/overview",
            world.base
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(overview["data"]["totals"]["clicks"], 9, "{overview}");
}

/// A state works once: the same callback again goes back with `state_used` and stores
/// nothing more; a forged or altered state is a 400 page (no `returnUrl` to trust).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_is_used_once_and_cannot_be_forged() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;
    world.platforms.consent(
        "youtube",
        "ya29.once",
        Some("1//once"),
        &[("UC-once", "Once")],
    );
    let link = world.link(&org, "youtube").await;
    let (status, authorize) = world.step(&link).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, callback) = world.step(&authorize).await;
    assert_eq!(status, StatusCode::FOUND);
    assert!(callback.starts_with(&format!("{}/connect/callback?", world.base)));
    let (status, first) = world.step(&callback).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(first.contains("status=connected"), "{first}");
    let (status, replayed) = world.step(&callback).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(replayed.starts_with(&world.return_url), "{replayed}");
    assert!(
        replayed.contains("status=error") && replayed.contains("code=state_used"),
        "{replayed}"
    );
    assert_eq!(
        world.api(&key, "/channels").await["data"]["youtube"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let state = url::Url::parse(&callback)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let mut altered = state.into_bytes();
    let middle = altered.len() / 2;
    altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for forged in [
        format!("{}/connect/callback?code=x&state={altered}", world.base),
        format!("{}/connect/callback?code=x&state=forged", world.base),
        format!("{}/connect/callback?code=x", world.base),
        format!("{}/connect/not-a-link", world.base),
    ] {
        let response = world.http.get(&forged).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{forged}");
        assert_eq!(response.headers()["cache-control"], "no-store");
        assert!(response
            .text()
            .await
            .unwrap()
            .contains("Connecting an account"));
    }
}

/// A consent URL completed in another browser than the one that opened the link (forwarded,
/// or phished to a stranger) goes back with `browser_mismatch` and connects nothing; the
/// state is not used up, so the browser that opened the link still completes it. The link's
/// opening sets the binding cookie: `HttpOnly`, `SameSite=Lax`, for the state's ten minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consent_completed_in_another_browser_connects_nothing() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;
    world.platforms.consent(
        "youtube",
        "ya29.bound",
        Some("1//bound"),
        &[("UC-bound", "Bound")],
    );
    let link = world.link(&org, "youtube").await;
    let opened = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(&link)
        .send()
        .await
        .unwrap();
    let cookie = opened.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("xf_connect_"), "{cookie}");
    for attribute in ["Max-Age=600", "HttpOnly", "SameSite=Lax"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains("Path="), "{cookie}");

    let (status, authorize) = world.step(&link).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, callback) = world.step(&authorize).await;
    let stranger = Arc::new(reqwest::cookie::Jar::default());
    let (status, back) = world.step_in(stranger, &callback).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(back.starts_with(&world.return_url), "{back}");
    assert!(
        back.contains("status=error") && back.contains("code=browser_mismatch"),
        "{back}"
    );
    let channels = world.api(&key, "/channels").await;
    assert_eq!(
        channels["data"]["youtube"],
        serde_json::json!([]),
        "{channels}"
    );

    let (_, mine) = world.step(&callback).await;
    assert!(mine.contains("status=connected"), "{mine}");
    let channels = world.api(&key, "/channels").await;
    assert_eq!(channels["data"]["youtube"].as_array().unwrap().len(), 1);
}

/// Time limits: a link opened after its hour, and a consent answered after the state's ten
/// minutes, go back to the app with `link_expired` and `state_expired`, storing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_links_and_states_go_back_with_their_code() {
    let world = world(true).await;
    let clock = world.clock.clone().unwrap();
    let (org, key) = world.organization("Studio", "pro").await;
    let link = world.link(&org, "youtube").await;
    clock.advance(chrono::Duration::minutes(61));
    let (status, back) = world.step(&link).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(back.contains("code=link_expired"), "{back}");

    world.platforms.consent(
        "youtube",
        "ya29.late",
        Some("1//late"),
        &[("UC-late", "Late")],
    );
    let link = world.link(&org, "youtube").await;
    let (_, authorize) = world.step(&link).await;
    let (_, callback) = world.step(&authorize).await;
    clock.advance(chrono::Duration::minutes(11));
    let (status, back) = world.step(&callback).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(back.contains("code=state_expired"), "{back}");
    assert_eq!(
        world.api(&key, "/channels").await["data"]["youtube"],
        json!([])
    );
}

/// A user who declines, and grants that reach nothing usable (a Google account without a
/// site, a YouTube login without a channel), go back with their code and store nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declined_consent_and_empty_grants_store_nothing() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;

    for platform in ["youtube", "linkedin"] {
        // LinkedIn says `user_cancelled_authorize` where the others say `access_denied`.
        world.platforms.declines(platform);
        let back = world.follow(&world.link(&org, platform).await).await;
        assert_eq!(get(&back, "status"), Some("error"));
        assert_eq!(get(&back, "code"), Some("access_denied"), "{platform}");
    }
    assert_eq!(
        world.platforms.authorization_requests("linkedin").len(),
        1,
        "LinkedIn's consent screen was asked"
    );

    world
        .platforms
        .consent("youtube", "ya29.empty", Some("1//empty"), &[]);
    let back = world.follow(&world.link(&org, "youtube").await).await;
    assert_eq!(get(&back, "code"), Some("no_account"), "{back:?}");
    assert_eq!(
        world.api(&key, "/channels").await["data"]["youtube"],
        json!([])
    );

    let (seo_org, seo_key) = world.organization("Acme", "growth").await;
    world.google.grant("1//no-sites", &[]);
    world.google.sign_in("1//no-sites");
    let back = world.follow(&world.link(&seo_org, "google").await).await;
    assert_eq!(get(&back, "code"), Some("no_account"), "{back:?}");
    world.google.deny_next();
    let back = world.follow(&world.link(&seo_org, "google").await).await;
    assert_eq!(get(&back, "code"), Some("access_denied"));
    let portfolio: Value = world
        .http
        .get(format!("{}/api/v1/organization/gsc", world.base))
        .bearer_auth(&seo_key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(portfolio["data"]["orgConnected"], false, "{portfolio}");
    let sites = world
        .http
        .get(format!(
            "{}/admin/organizations/{seo_org}/gsc/sites",
            world.base
        ))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(
        sites.status(),
        StatusCode::BAD_REQUEST,
        "no account, no sites"
    );
    let body: Value = sites.json().await.unwrap();
    assert_eq!(body["error"]["code"], "gsc_not_linked", "{body}");
}

/// Links are refused up front: a `returnUrl` on another host (no open redirect), an unknown
/// provider, another organization's channel, a channel of another platform, an unknown
/// organization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_are_refused_for_foreign_return_urls_and_channels() {
    let world = world(false).await;
    let (org, _) = world.organization("Studio", "pro").await;
    let (other, _) = world.organization("Other", "pro").await;
    world.platforms.consent(
        "youtube",
        "ya29.other",
        Some("1//other"),
        &[("UC-other", "Other")],
    );
    let back = world.follow(&world.link(&other, "youtube").await).await;
    let others_channel = get(&back, "channels").unwrap().to_owned();

    // A returnUrl of 2,048 characters goes through consent and back (its state stays within
    // what the callback opens); a longer one is refused when the link is made, before a user
    // is sent anywhere.
    let longest = format!("{}?pad=", world.return_url);
    let longest = format!("{longest}{}", "a".repeat(2048 - longest.len()));
    let body = json!({"provider": "youtube", "returnUrl": longest});
    let (status, created) = world.create_link(&other, body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let link = created["data"]["connectLink"]["url"].as_str().unwrap();
    world.platforms.consent(
        "youtube",
        "ya29.other",
        Some("1//other"),
        &[("UC-other", "Other")],
    );
    let back = world.follow(link).await;
    assert_eq!(get(&back, "status"), Some("connected"), "{back:?}");
    let longer = json!({"provider": "youtube", "returnUrl": format!("{longest}a")});
    let (status, refused) = world.create_link(&other, longer).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(
        refused["error"]["details"][0]["field"], "returnUrl",
        "{refused}"
    );

    for (org, body, status, code) in [
        (
            org.as_str(),
            json!({"provider": "youtube", "returnUrl": "https://evil.example/steal"}),
            400,
            "validation_error",
        ),
        (
            org.as_str(),
            json!({"provider": "youtube", "returnUrl": "javascript:alert(1)"}),
            400,
            "validation_error",
        ),
        (
            org.as_str(),
            json!({"provider": "myspace", "returnUrl": world.return_url}),
            400,
            "validation_error",
        ),
        (
            org.as_str(),
            json!({"provider": "youtube", "returnUrl": world.return_url, "channelId": others_channel}),
            404,
            "not_found",
        ),
        (
            other.as_str(),
            json!({"provider": "google", "returnUrl": world.return_url, "channelId": others_channel}),
            400,
            "validation_error",
        ),
        (
            "org_00000000000000000000000000000000",
            json!({"provider": "youtube", "returnUrl": world.return_url}),
            404,
            "not_found",
        ),
    ] {
        let (got, reply) = world.create_link(org, body.clone()).await;
        assert_eq!(got.as_u16(), status, "{body}: {reply}");
        assert_eq!(reply["error"]["code"], code, "{body}: {reply}");
    }
}

/// A reconnect link keeps the channel's id and takes the new tokens; one opened by an account
/// that does not reach that channel goes back with `no_account` and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_link_keeps_the_channel() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;
    world.platforms.consent(
        "youtube",
        "ya29.first",
        Some("1//first"),
        &[("UC-mine", "Mine")],
    );
    let back = world.follow(&world.link(&org, "youtube").await).await;
    let channel = get(&back, "channels").unwrap().to_owned();

    let reconnect = |channel: &str| json!({"provider": "youtube", "returnUrl": world.return_url, "channelId": channel});
    world.platforms.consent(
        "youtube",
        "ya29.someone-else",
        Some("1//else"),
        &[("UC-else", "Else")],
    );
    let (_, link) = world.create_link(&org, reconnect(&channel)).await;
    let back = world
        .follow(link["data"]["connectLink"]["url"].as_str().unwrap())
        .await;
    assert_eq!(get(&back, "code"), Some("no_account"), "{back:?}");

    world.platforms.consent(
        "youtube",
        "ya29.second",
        Some("1//second"),
        &[("UC-mine", "Mine"), ("UC-extra", "Extra")],
    );
    let (_, link) = world.create_link(&org, reconnect(&channel)).await;
    let back = world
        .follow(link["data"]["connectLink"]["url"].as_str().unwrap())
        .await;
    assert_eq!(get(&back, "status"), Some("connected"), "{back:?}");
    assert_eq!(get(&back, "channels"), Some(channel.as_str()));
    let listed = world.api(&key, "/channels").await;
    assert_eq!(
        listed["data"]["youtube"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
}

/// TikTok, LinkedIn and Pinterest: each link leads through the platform's consent screen
/// (its own parameters: TikTok's `client_key` and comma-separated scopes, no PKCE where the
/// platform has none) back to the app; the accounts are stored as the platforms name them,
/// and a video published to the three goes out with the connected tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiktok_linkedin_and_pinterest_accounts_connect_and_publish() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;
    let platforms = &world.platforms;
    platforms.consent(
        "tiktok",
        "act.connected",
        Some("rft.connected"),
        &[("open-tt-1", "tt.creator")],
    );
    platforms.consent(
        "linkedin",
        "li.connected",
        None,
        &[("Xm3sub", "Ada Lovelace")],
    );
    platforms.consent(
        "pinterest",
        "pina.connected",
        Some("pinr.connected"),
        &[("549755885175", "pin.studio")],
    );
    let mut connected = Vec::new();
    for provider in ["tiktok", "linkedin", "pinterest"] {
        let back = world.follow(&world.link(&org, provider).await).await;
        assert_eq!(
            get(&back, "status"),
            Some("connected"),
            "{provider}: {back:?}"
        );
        connected.push(get(&back, "channels").unwrap().to_owned());
        let asked = &platforms.authorization_requests(provider)[0];
        assert!(
            !asked.contains_key("code_challenge"),
            "{provider} has no PKCE for web apps"
        );
    }
    assert_eq!(
        platforms.authorization_requests("tiktok")[0]["client_key"],
        "awxftestclientkey"
    );

    let channels = world.api(&key, "/channels").await["data"].clone();
    assert_eq!(channels["tiktok"][0]["accountId"], "open-tt-1");
    assert_eq!(channels["tiktok"][0]["username"], "tt.creator");
    assert_eq!(channels["linkedin"][0]["accountId"], "urn:li:person:Xm3sub");
    assert_eq!(channels["linkedin"][0]["name"], "Ada Lovelace");
    assert_eq!(channels["pinterest"][0]["accountId"], "549755885175");

    let workers = world.workers();
    // LinkedIn wants 75 KB at least: noise keeps the file from compressing to less.
    let clip = xf_tests::media::grainy_video("mp4", 640, 360, 5);
    let shown = world
        .publish(
            &key,
            &[
                ("platforms", r#"["tiktok","linkedin","pinterest"]"#),
                ("title", "Launch"),
            ],
            &clip,
        )
        .await;
    for platform in ["tiktok", "linkedin", "pinterest"] {
        assert_eq!(
            shown["data"][platform]["status"], "published",
            "{platform}: {shown}"
        );
    }
    // The upload named no board: the pin went on the account's first board, chosen at connect.
    assert_eq!(platforms.pins()[0]["board_id"], "549755885175-main");
    workers.shutdown(Duration::from_secs(5)).await;

    // The host changes the default board; without one, an upload must name a board.
    let pinterest_channel = channels["pinterest"][0]["id"].as_str().unwrap().to_owned();
    let patch = |channel: &str, body: Value| {
        world
            .http
            .patch(format!("{}/admin/channels/{channel}", world.base))
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
    };
    let changed: Value = patch(
        &pinterest_channel,
        json!({"defaultBoard": "549755885175-ideas"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        changed["data"]["channel"]["defaultBoard"], "549755885175-ideas",
        "{changed}"
    );
    let refused = patch(&pinterest_channel, json!({"defaultBoard": ""}))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let tiktok_channel = channels["tiktok"][0]["id"].as_str().unwrap().to_owned();
    let not_pinterest = patch(&tiktok_channel, json!({"defaultBoard": "x"}))
        .await
        .unwrap();
    assert_eq!(not_pinterest.status(), StatusCode::NOT_FOUND);
    patch(&pinterest_channel, json!({"defaultBoard": null}))
        .await
        .unwrap();
    let boardless = world
        .upload_video(&key, &[("platforms", r#"["pinterest"]"#)], &clip)
        .await;
    assert_eq!(
        boardless["error"]["details"][0]["field"], "pinterest.boardId",
        "{boardless}"
    );
}

/// LinkedIn with organizations: the member and every organization it administers become
/// channels, named as LinkedIn names them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linkedin_link_connects_the_member_and_its_organizations() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;
    world.platforms.consent(
        "linkedin",
        "li.admin",
        None,
        &[
            ("Ad4sub", "Ada Admin"),
            ("2414183", "Acme Corp"),
            ("777", "Acme Labs"),
        ],
    );
    let back = world.follow(&world.link(&org, "linkedin").await).await;
    assert_eq!(
        get(&back, "channels").unwrap().split(',').count(),
        3,
        "{back:?}"
    );
    let channels = world.api(&key, "/channels").await["data"]["linkedin"].clone();
    let mut accounts: Vec<(String, String)> = channels
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["accountId"].as_str().unwrap().to_owned(),
                c["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    accounts.sort();
    assert_eq!(
        accounts,
        [
            (
                "urn:li:organization:2414183".to_owned(),
                "Acme Corp".to_owned()
            ),
            ("urn:li:organization:777".to_owned(), "Acme Labs".to_owned()),
            ("urn:li:person:Ad4sub".to_owned(), "Ada Admin".to_owned()),
        ]
    );
}

/// Instagram, with Facebook Login: the code's short-lived token is exchanged for a long-lived
/// one, each Page's Instagram professional account becomes a channel with its Page's token,
/// and a reel published to it goes out with that token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instagram_accounts_connect_through_their_pages_and_publish() {
    let world = world(false).await;
    let (org, key) = world.organization("Studio", "pro").await;
    world.platforms.consent(
        "instagram",
        "long.instagram",
        None,
        &[
            ("17841400000000001", "studio.ig"),
            ("17841400000000002", "studio.shop"),
        ],
    );
    let back = world.follow(&world.link(&org, "instagram").await).await;
    assert_eq!(get(&back, "status"), Some("connected"), "{back:?}");
    assert_eq!(get(&back, "channels").unwrap().split(',').count(), 2);
    let asked = &world.platforms.authorization_requests("instagram")[0];
    assert_eq!(
        asked["scope"],
        "instagram_basic,instagram_content_publish,instagram_manage_comments,pages_show_list,\
         pages_read_engagement"
    );
    let channels = world.api(&key, "/channels").await["data"]["instagram"].clone();
    let mut accounts: Vec<&str> = channels
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["accountId"].as_str().unwrap())
        .collect();
    accounts.sort();
    assert_eq!(accounts, ["17841400000000001", "17841400000000002"]);

    let workers = world.workers();
    let clip = xf_tests::media::video("mp4", 640, 360, 4, false, 0);
    let shown = world
        .publish(
            &key,
            &[
                ("platforms", r#"["instagram"]"#),
                ("selectedInstagramAccounts", r#"["17841400000000002"]"#),
            ],
            &clip,
        )
        .await;
    assert_eq!(shown["data"]["instagram"]["status"], "published", "{shown}");
    workers.shutdown(Duration::from_secs(5)).await;
}
