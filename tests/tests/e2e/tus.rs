//! Resumable uploads (tus 1.0.0) through the service: the protocol's headers and errors,
//! chunks with and without checksums, creation with upload, termination, expiry and the
//! purge, and a finished upload used as a video form's `fileId`.

use base64::Engine;
use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use serde_json::json;
use sha1::Digest;
use xf_core::media::blob::LocalBlobStore;
use xf_tests::media::{multipart, video};
use xf_tests::{Reply, TestApp};

crate::backends!(
    a_chunked_upload_becomes_a_video,
    the_protocol_refuses_what_it_must,
    uploads_end_by_termination_or_expiry,
);

/// A tus request with `X-API-Key`, `Tus-Resumable: 1.0.0` and `headers`.
async fn tus(
    app: &TestApp,
    method: Method,
    path: &str,
    key: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Reply {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("x-api-key", key)
        .header("tus-resumable", "1.0.0");
    for (name, value) in headers {
        builder = builder.header(*name, value);
    }
    app.send(
        builder
            .body(Full::new(Bytes::copy_from_slice(body)))
            .expect("a request"),
    )
    .await
}

fn chunk_headers(offset: usize, checksum: Option<&[u8]>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("content-type", "application/offset+octet-stream".to_owned()),
        ("upload-offset", offset.to_string()),
    ];
    if let Some(bytes) = checksum {
        let digest = sha1::Sha1::digest(bytes);
        headers.push((
            "upload-checksum",
            format!(
                "sha1 {}",
                base64::engine::general_purpose::STANDARD.encode(digest)
            ),
        ));
    }
    headers
}

/// Sends a multipart body as a video form with `X-API-Key`.
async fn post_video_form(app: &TestApp, key: &str, content_type: &str, body: &[u8]) -> Reply {
    app.send(
        Request::post("/media/videos")
            .header("x-api-key", key)
            .header("content-type", content_type)
            .body(Full::new(Bytes::copy_from_slice(body)))
            .expect("a request"),
    )
    .await
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .header(name)
        .unwrap_or_else(|| panic!("no {name}: {:?}", reply.headers))
}

fn metadata(file_name: &str) -> String {
    format!(
        "filename {},is_confidential",
        base64::engine::general_purpose::STANDARD.encode(file_name)
    )
}

fn with_blobs(app: TestApp) -> (TestApp, std::path::PathBuf) {
    let root = std::env::temp_dir().join(format!("xf-tus-test-{}", uuid::Uuid::now_v7().simple()));
    let blobs = LocalBlobStore::new(&root).expect("a blob directory");
    (
        app.reconfigured(|builder| builder.blob_store(std::sync::Arc::new(blobs))),
        root,
    )
}

/// The files below the blob directory, `.partial/` included (but not the lock files of the
/// stores that write there).
fn files_below(root: &std::path::Path) -> usize {
    crate::media::stored_files(root).len()
}

async fn studio(app: &TestApp) -> (String, String) {
    let created = app.organization("Studio", "plus").await;
    app.admin(
        Method::POST,
        &format!("/organizations/{}/channels", created.organization.id),
        Some(json!({"platform": "tiktok", "accountId": "tt", "displayName": "TT", "accessToken": "t"})),
    )
    .await
    .expect(201);
    (created.live_key, created.test_key)
}

pub(crate) async fn a_chunked_upload_becomes_a_video(app: TestApp) {
    let (app, root) = with_blobs(app);
    let (key, test_key) = studio(&app).await;
    let clip = video("mp4", 640, 360, 3, true, 0);
    let third = clip.len() / 3;

    // Creation with the first chunk.
    let created = tus(
        &app,
        Method::POST,
        "/media/uploads",
        &key,
        &[
            ("upload-length", clip.len().to_string()),
            ("upload-metadata", metadata("launch.mp4")),
            ("content-type", "application/offset+octet-stream".to_owned()),
        ],
        &clip[..third],
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(header(&created, "tus-resumable"), "1.0.0");
    assert_eq!(header(&created, "upload-offset"), third.to_string());
    let location = header(&created, "location").to_owned();
    assert!(location.starts_with("/media/uploads/upl_"), "{location}");
    let file_id = location.rsplit('/').next().unwrap().to_owned();
    assert!(header(&created, "upload-expires").ends_with(" GMT"));

    let head = tus(&app, Method::HEAD, &location, &key, &[], b"").await;
    assert_eq!(head.status, 200);
    assert_eq!(header(&head, "upload-offset"), third.to_string());
    assert_eq!(header(&head, "upload-length"), clip.len().to_string());
    assert_eq!(header(&head, "upload-metadata"), metadata("launch.mp4"));
    assert_eq!(header(&head, "cache-control"), "no-store");

    // A chunk whose checksum does not match is dropped whole.
    let second = &clip[third..2 * third];
    let mut wrong = chunk_headers(third, Some(b"other bytes"));
    let bad = tus(&app, Method::PATCH, &location, &key, &wrong, second).await;
    assert_eq!(bad.status, 460, "{}", bad.body);
    assert_eq!(bad.body["error"]["code"], "checksum_mismatch");
    wrong.pop();
    let head = tus(&app, Method::HEAD, &location, &key, &[], b"").await;
    assert_eq!(header(&head, "upload-offset"), third.to_string());

    // Not finished yet: the form refuses its fileId.
    let (content_type, body) = multipart(
        &[("platforms", r#"["tiktok"]"#), ("fileId", &file_id)],
        None,
    );
    let early = post_video_form(&app, &key, &content_type, &body).await;
    assert_eq!(early.status, 400, "{}", early.body);
    assert_eq!(early.body["error"]["details"][0]["field"], "fileId");

    let patched = tus(
        &app,
        Method::PATCH,
        &location,
        &key,
        &chunk_headers(third, Some(second)),
        second,
    )
    .await;
    assert_eq!(patched.status, 204, "{}", patched.body);
    assert_eq!(header(&patched, "upload-offset"), (2 * third).to_string());
    let last = &clip[2 * third..];
    let done = tus(
        &app,
        Method::PATCH,
        &location,
        &key,
        &chunk_headers(2 * third, None),
        last,
    )
    .await;
    assert_eq!(done.status, 204);
    assert_eq!(header(&done, "upload-offset"), clip.len().to_string());

    // The finished upload is the form's file, and its bytes are counted once, as the
    // chunks that brought them.
    let used = post_video_form(&app, &key, &content_type, &body).await;
    assert_eq!(used.status, 201, "{}", used.body);
    let counted = |kind: &str| {
        let metrics = app.xf.metrics().encode();
        let series = format!("xf_upload_bytes_total{{kind=\"{kind}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series))
            .map_or(0, |value| value.parse::<u64>().expect("a count"))
    };
    assert_eq!(counted("resumable"), clip.len() as u64);
    assert_eq!(
        counted("multipart"),
        0,
        "the form's fileId is not counted again"
    );
    let id = used.body["data"][0]["id"].as_str().unwrap().to_owned();
    let item = app
        .send(
            Request::get(format!("/media/videos/{id}"))
                .header("x-api-key", &key)
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await;
    assert_eq!(item.body["data"]["file"]["name"], "launch.mp4");
    assert_eq!(item.body["data"]["file"]["size"], clip.len());
    assert_eq!(item.body["data"]["file"]["durationMs"], 3000);
    assert_eq!(item.body["data"]["file"]["width"], 640);
    // The upload was used up: its chunks are gone, only the item's file is left.
    let gone = tus(&app, Method::HEAD, &location, &key, &[], b"").await;
    assert_eq!(gone.status, 404);
    assert_eq!(files_below(&root), 1);
    let again = post_video_form(&app, &key, &content_type, &body).await;
    assert_eq!(again.status, 400);

    // A test key's upload is real (HEAD must tell where to resume); its form is checked and
    // mocked, and leaves the upload unused and no item behind.
    let whole = tus(
        &app,
        Method::POST,
        "/media/uploads",
        &test_key,
        &[
            ("upload-length", clip.len().to_string()),
            ("upload-metadata", metadata("trial.mp4")),
            ("content-type", "application/offset+octet-stream".to_owned()),
        ],
        &clip,
    )
    .await;
    assert_eq!(whole.status, 201, "{}", whole.body);
    let test_location = header(&whole, "location").to_owned();
    let test_file = test_location.rsplit('/').next().unwrap().to_owned();
    let (content_type, body) = multipart(
        &[("platforms", r#"["tiktok"]"#), ("fileId", &test_file)],
        None,
    );
    let mocked = post_video_form(&app, &test_key, &content_type, &body).await;
    assert_eq!(mocked.status, 201, "{}", mocked.body);
    let kept = tus(&app, Method::HEAD, &test_location, &test_key, &[], b"").await;
    assert_eq!(kept.status, 200);
    assert_eq!(header(&kept, "upload-offset"), clip.len().to_string());
    let list = app
        .send(
            Request::get("/media/videos")
                .header("x-api-key", &key)
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await;
    assert_eq!(list.body["data"]["pagination"]["total"], 1, "{}", list.body);
    let _ = std::fs::remove_dir_all(root);
}

async fn the_protocol_refuses_what_it_must(app: TestApp) {
    let (app, root) = with_blobs(app);
    let (key, _) = studio(&app).await;
    // OPTIONS needs no key.
    let options = app
        .send(
            Request::builder()
                .method(Method::OPTIONS)
                .uri("/media/uploads")
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await;
    assert_eq!(options.status, 204);
    assert_eq!(header(&options, "tus-version"), "1.0.0");
    assert_eq!(
        header(&options, "tus-extension"),
        "creation,creation-with-upload,expiration,termination,checksum"
    );
    assert_eq!(header(&options, "tus-checksum-algorithm"), "sha1");
    assert_eq!(header(&options, "tus-max-size"), (4u64 << 30).to_string());

    // Without Tus-Resumable: 412 with Tus-Version.
    let request = Request::post("/media/uploads")
        .header("x-api-key", &key)
        .header("upload-length", "10")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let old = app.send(request).await;
    assert_eq!(old.status, 412);
    assert_eq!(header(&old, "tus-version"), "1.0.0");
    assert_eq!(old.body["error"]["code"], "tus_version_unsupported");
    for (headers, field) in [
        (vec![], "Upload-Length"),
        (vec![("upload-length", "ten".to_owned())], "Upload-Length"),
        (
            vec![("upload-defer-length", "1".to_owned())],
            "Upload-Defer-Length",
        ),
        (
            vec![
                ("upload-length", "10".to_owned()),
                ("upload-metadata", "filename ***".to_owned()),
            ],
            "Upload-Metadata",
        ),
        (
            vec![
                ("upload-length", "10".to_owned()),
                ("upload-checksum", "md5 AAAA".to_owned()),
                ("content-type", "application/offset+octet-stream".to_owned()),
            ],
            "Upload-Checksum",
        ),
    ] {
        let reply = tus(
            &app,
            Method::POST,
            "/media/uploads",
            &key,
            &headers,
            b"0123456789",
        )
        .await;
        assert_eq!(reply.status, 400, "{field}: {}", reply.body);
        assert_eq!(reply.body["success"], false);
        assert_eq!(reply.body["error"]["details"][0]["field"], field);
    }
    let huge = tus(
        &app,
        Method::POST,
        "/media/uploads",
        &key,
        &[("upload-length", (5u64 << 30).to_string())],
        b"",
    )
    .await;
    assert_eq!(huge.status, 413);

    let created = tus(
        &app,
        Method::POST,
        "/media/uploads",
        &key,
        &[("upload-length", "10".to_owned())],
        b"",
    )
    .await;
    assert_eq!(created.status, 201);
    let location = header(&created, "location").to_owned();
    // Wrong content type, missing or wrong offset, more bytes than the length.
    let reply = tus(
        &app,
        Method::PATCH,
        &location,
        &key,
        &[
            ("upload-offset", "0".to_owned()),
            ("content-type", "application/octet-stream".to_owned()),
        ],
        b"0123",
    )
    .await;
    assert_eq!(reply.status, 415);
    let reply = tus(
        &app,
        Method::PATCH,
        &location,
        &key,
        &[("content-type", "application/offset+octet-stream".to_owned())],
        b"0123",
    )
    .await;
    assert_eq!(reply.status, 400);
    let reply = tus(
        &app,
        Method::PATCH,
        &location,
        &key,
        &chunk_headers(5, None),
        b"0123",
    )
    .await;
    assert_eq!(reply.status, 409);
    assert_eq!(header(&reply, "upload-offset"), "0");
    let reply = tus(
        &app,
        Method::PATCH,
        &location,
        &key,
        &chunk_headers(0, None),
        b"0123456789AB",
    )
    .await;
    assert_eq!(reply.status, 413);
    let head = tus(&app, Method::HEAD, &location, &key, &[], b"").await;
    assert_eq!(header(&head, "upload-offset"), "0");
    // Another organization's key does not see it; an unknown id is a 404.
    let rival = app.organization("Rival", "pro").await;
    let theirs = tus(&app, Method::HEAD, &location, &rival.live_key, &[], b"").await;
    assert_eq!(theirs.status, 404);
    let unknown = tus(
        &app,
        Method::PATCH,
        "/media/uploads/upl_nope",
        &key,
        &chunk_headers(0, None),
        b"x",
    )
    .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["success"], false);
    // A fileId of another organization, or of no upload, is refused by the form.
    let (content_type, body) = multipart(
        &[
            ("platforms", r#"["tiktok"]"#),
            ("fileId", location.rsplit('/').next().unwrap()),
        ],
        None,
    );
    let foreign = post_video_form(&app, &rival.live_key, &content_type, &body).await;
    assert_eq!(foreign.status, 400);
    assert_eq!(foreign.body["error"]["details"][0]["field"], "fileId");
    assert_eq!(files_below(&root), 0, "no refused chunk was kept");
    let _ = std::fs::remove_dir_all(root);
}

async fn uploads_end_by_termination_or_expiry(app: TestApp) {
    let (app, root) = with_blobs(app);
    let (key, _) = studio(&app).await;
    let start = |length: &str| {
        let (app, key, length) = (&app, key.clone(), length.to_owned());
        async move {
            let created = tus(
                app,
                Method::POST,
                "/media/uploads",
                &key,
                &[
                    ("upload-length", length),
                    ("content-type", "application/offset+octet-stream".to_owned()),
                ],
                b"abc",
            )
            .await;
            assert_eq!(created.status, 201, "{}", created.body);
            created.header("location").unwrap().to_owned()
        }
    };
    let terminated = start("10").await;
    let kept = start("10").await;
    assert_eq!(files_below(&root), 2);
    let reply = tus(&app, Method::DELETE, &terminated, &key, &[], b"").await;
    assert_eq!(reply.status, 204);
    assert_eq!(header(&reply, "tus-resumable"), "1.0.0");
    assert_eq!(
        tus(&app, Method::HEAD, &terminated, &key, &[], b"")
            .await
            .status,
        404
    );
    assert_eq!(
        tus(&app, Method::DELETE, &terminated, &key, &[], b"")
            .await
            .status,
        404
    );
    assert_eq!(files_below(&root), 1);

    // 24 hours later the other one is gone too, and the purge removes its bytes.
    app.clock.advance(chrono::Duration::hours(24));
    assert_eq!(
        tus(&app, Method::HEAD, &kept, &key, &[], b"").await.status,
        404
    );
    assert_eq!(
        tus(
            &app,
            Method::PATCH,
            &kept,
            &key,
            &chunk_headers(3, None),
            b"d"
        )
        .await
        .status,
        404
    );
    assert_eq!(app.xf.purge_expired_uploads(100).await.unwrap(), 1);
    assert_eq!(files_below(&root), 0);
    let _ = std::fs::remove_dir_all(root);
}
