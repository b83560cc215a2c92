//! The media publishing API: uploads (a file part streamed to the blob store, then the form
//! checked and the item stored), media items and lists, and connected channels.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::{Admin, Caller, Xf};
use crate::error::{Error, Result};
use crate::ids::{ChannelId, Id, MediaId, OrganizationId};
use crate::media::api::{
    AdminChannelView, ChannelsView, DeletedMedia, MediaItemView, MediaList, MediaListQuery,
    MediaUsage, NewChannel, Pagination, UploadedItem,
};
use crate::media::blob::BlobStore;
use crate::media::inspect::{extension_of, inspect_image, inspect_video, RangeRead, Refused};
use crate::media::publish::MEDIA_PUBLISH;
use crate::media::publishing::PUBLISH_ATTEMPTS;
use crate::media::rules::{self, ItemTexts};
use crate::media::settings::{auto_publish, parse_upload_fields, MediaPatch, UploadFields};
use crate::media::Post;
use crate::media::{
    Channel, FileFacts, MediaItem, MediaKind, MediaStatus, Platform, PlatformStatus,
    PlatformTarget, StoredFile,
};
use crate::model::media::channel_owner;
use crate::model::JobRecord;
use crate::store::{MediaCancel, MediaDelete, MediaEdited, MediaFilter, PostsDelete};

/// The bounds of uploads: sizes, the shape of upload forms, and how many uploads an
/// organization may have in progress at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaLimits {
    /// The largest video, in bytes (default 4 GiB).
    pub max_video_bytes: u64,
    /// The largest image, in bytes (default 50 MiB).
    pub max_image_bytes: u64,
    /// The most parts an upload form may have, its file included (default 256).
    pub max_form_parts: usize,
    /// The longest text field of an upload form, in bytes (default 64 KiB); reading stops
    /// there.
    pub max_form_field_bytes: usize,
    /// The most bytes of text fields an upload form may have in all (default 1 MiB).
    pub max_form_text_bytes: usize,
    /// The most uploads (form file parts and tus chunks) one organization may have in
    /// progress at once on this instance (default 32); beyond, `429 too_many_uploads`.
    pub max_uploads_per_organization: usize,
}

impl Default for MediaLimits {
    fn default() -> Self {
        MediaLimits {
            max_video_bytes: 4 << 30,
            max_image_bytes: 50 << 20,
            max_form_parts: 256,
            max_form_field_bytes: 64 << 10,
            max_form_text_bytes: 1 << 20,
            max_uploads_per_organization: 32,
        }
    }
}

impl MediaLimits {
    fn of(&self, kind: MediaKind) -> u64 {
        match kind {
            MediaKind::Video => self.max_video_bytes,
            MediaKind::Image => self.max_image_bytes,
        }
    }
}

/// How slowly a request body may arrive. A body is read in windows of `body_rate_window`:
/// one that delivers fewer than `min_body_bytes_per_sec × window` bytes in a window (nothing
/// at all, or a trickle) is cut off with `408 request_timeout`, and what arrived is dropped.
/// An honest upload on a slow link keeps going however long it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// The slowest average rate accepted over a window, in bytes per second (default 1,024);
    /// 0 accepts any rate.
    pub min_body_bytes_per_sec: u64,
    /// The window the rate is measured over (default 20 s).
    pub body_rate_window: std::time::Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            min_body_bytes_per_sec: 1024,
            body_rate_window: std::time::Duration::from_secs(20),
        }
    }
}

/// Why a request body stopped before its end.
///
/// Not `#[non_exhaustive]`: the edge that is given one matches on it, and a variant
/// added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// The connection broke, or the body is malformed; the cause is for people.
    Broken(String),
    /// The body arrived slower than the minimum rate (see `RequestLimits`); the message says
    /// which.
    TooSlow(String),
}

impl BodyError {
    /// The error of a request whose body stopped early: `400` on `field`, or `408
    /// request_timeout`; `lost` says what became of the bytes that arrived.
    pub fn into_error(self, field: &str, lost: &str) -> Error {
        match self {
            BodyError::Broken(cause) => Error::invalid(
                field,
                format!("the body broke off before its end ({cause}); {lost}"),
            ),
            BodyError::TooSlow(message) => Error::RequestTimeout(format!("{message}; {lost}")),
        }
    }
}

/// The bytes of a file part as they arrive.
#[async_trait]
pub trait ChunkSource: Send {
    /// The next chunk; `None` at the end; `Err` when the body broke off or was too slow.
    async fn next_chunk(&mut self) -> Option<std::result::Result<bytes::Bytes, BodyError>>;
}

/// A blob that is deleted when dropped, unless it was handed to an owner in the store
/// ([`OwnedBlob::keep`]): what holds a blob between writing it and recording it.
pub(super) struct OwnedBlob {
    key: String,
    /// `None` once kept.
    owner: Option<Arc<dyn BlobStore>>,
}

impl OwnedBlob {
    pub(super) fn new(key: String, blobs: &Arc<dyn BlobStore>) -> Self {
        OwnedBlob {
            key,
            owner: Some(Arc::clone(blobs)),
        }
    }

    pub(super) fn key(&self) -> &str {
        &self.key
    }

    /// The blob belongs to what the store recorded: dropping this no longer deletes it.
    pub(super) fn keep(mut self) {
        self.owner = None;
    }

    /// Deletes the blob now (rather than on a task of its own, as dropping it does).
    pub(super) async fn discard(mut self) {
        if let Some(blobs) = self.owner.take() {
            delete_logged(&*blobs, &self.key).await;
        }
    }
}

impl Drop for OwnedBlob {
    fn drop(&mut self) {
        if let Some(blobs) = self.owner.take() {
            delete_soon(blobs, std::mem::take(&mut self.key));
        }
    }
}

/// A file part written to the blob store, not yet a media item. Given to
/// [`Media::create`], which keeps it as the item's file. It owns its blob: a staged file
/// dropped on any other path (a refused form, an idempotent replay, a client that went away)
/// deletes it.
pub struct StagedFile {
    blob: OwnedBlob,
    name: String,
    size: u64,
    extension: String,
}

impl std::fmt::Debug for StagedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedFile")
            .field("key", &self.blob.key)
            .field("name", &self.name)
            .field("size", &self.size)
            .finish()
    }
}

impl StagedFile {
    /// The name the client gave the file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// Deletes the blob under `key` on a task of its own (from a `Drop`, which cannot wait); the
/// blob sweep ([`Xf::sweep_blobs`]) catches what a runtime shutting down leaves.
pub(super) fn delete_soon(blobs: Arc<dyn BlobStore>, key: String) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(%key, "a staged blob outlived its runtime; the blob sweep will delete it");
        return;
    };
    runtime.spawn(async move { delete_logged(&*blobs, &key).await });
}

/// Deletes the blob under `key`; a failure is logged (the blob sweep retries it).
pub(super) async fn delete_logged(blobs: &dyn BlobStore, key: &str) {
    if let Err(error) = blobs.delete(key).await {
        tracing::warn!(%error, %key, "a blob was not deleted");
    }
}

/// Runs `work` to its end on a task of its own, whatever becomes of the caller: what records
/// a blob must not be cut off between writing the record and keeping the blob. `what` names
/// the work in the error of a task that panicked.
pub(super) async fn to_the_end<T: Send + 'static>(
    what: &str,
    work: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    tokio::spawn(work)
        .await
        .map_err(|e| Error::internal(format!("{what}: {e}")))?
}

/// One upload of an organization in progress on this instance; dropping it frees the place.
pub(super) struct UploadSlot {
    slots: Arc<UploadSlots>,
    organization: OrganizationId,
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        let mut counts = self.slots.lock();
        if let Some(count) = counts.get_mut(&self.organization) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.organization);
            }
        }
    }
}

/// How many uploads each organization has in progress on this instance.
#[derive(Debug, Default)]
pub(super) struct UploadSlots(std::sync::Mutex<std::collections::HashMap<OrganizationId, usize>>);

impl UploadSlots {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<OrganizationId, usize>> {
        // A panic while the map was held cannot leave a count half-changed.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Default page size of media lists.
const DEFAULT_LIMIT: u64 = 10;
/// Largest page size of media lists.
const MAX_LIMIT: u64 = 100;

fn accepted_extensions(kind: MediaKind) -> &'static [&'static str] {
    match kind {
        MediaKind::Video => &["mp4", "mov"],
        MediaKind::Image => &["jpg", "jpeg", "png", "webp"],
    }
}

fn refused_in(field: &str, error: Refused) -> Error {
    match error {
        Refused::Io(cause) => Error::internal(format!("reading a staged upload: {cause}")),
        other => Error::invalid(field, other.to_string()),
    }
}

/// What a form's file part may be: the field it is reported under, what it is called in a
/// refusal, its extensions and its size limit.
struct Accepted {
    field: &'static str,
    what: &'static str,
    extensions: &'static [&'static str],
    limit: u64,
}

/// The largest custom thumbnail YouTube's `thumbnails.set` takes: 2 MB.
const THUMBNAIL_MAX_BYTES: u64 = 2 << 20;

/// The extensions of custom thumbnails: JPEG and PNG, the images `thumbnails.set` takes.
const THUMBNAIL_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png"];

/// The field a platform's account list is given in (nested form).
fn accounts_field(platform: Platform) -> String {
    let key = if platform == Platform::Youtube {
        "channels"
    } else {
        "accounts"
    };
    format!("{}.{key}", platform.as_str())
}

/// The media publishing API's use cases, [`Xf::media`]'s: staging a form's files, creating,
/// reading, editing, cancelling, deleting and listing media items, deleting posts, resumable
/// uploads (`xf/uploads.rs`), the caller's channels and media usage.
#[derive(Debug, Clone, Copy)]
pub struct Media<'a> {
    pub(super) xf: &'a Xf,
}

impl Xf {
    /// The media API's use cases ([`Media`]): `xf.media().create(…)`.
    pub fn media(&self) -> Media<'_> {
        Media { xf: self }
    }
}

impl Xf {
    /// The bounds of uploads.
    pub fn media_limits(&self) -> MediaLimits {
        self.inner.media_limits
    }

    /// The slowest request bodies accepted.
    pub fn request_limits(&self) -> RequestLimits {
        self.inner.request_limits
    }

    /// A place for one more upload of the caller's organization, or `429 too_many_uploads`
    /// when it has [`MediaLimits::max_uploads_per_organization`] in progress.
    pub(super) fn upload_slot(&self, organization: &OrganizationId) -> Result<UploadSlot> {
        let limit = self.inner.media_limits.max_uploads_per_organization;
        let slots = &self.inner.upload_slots;
        let mut counts = slots.lock();
        let count = counts.entry(organization.clone()).or_insert(0);
        if *count >= limit {
            return Err(Error::TooManyUploads { limit });
        }
        *count += 1;
        Ok(UploadSlot {
            slots: Arc::clone(slots),
            organization: organization.clone(),
        })
    }

    /// [`Media::stage_file`] without counting the bytes as a form's: for a finished
    /// resumable upload's, counted as `resumable` as its chunks arrived.
    pub(super) async fn stage_of_kind(
        &self,
        caller: &Caller,
        kind: MediaKind,
        file_name: &str,
        body: &mut (dyn ChunkSource + '_),
    ) -> Result<StagedFile> {
        let accepted = Accepted {
            field: "file",
            what: kind.as_str(),
            extensions: accepted_extensions(kind),
            limit: self.inner.media_limits.of(kind),
        };
        self.stage(caller, &accepted, file_name, body).await
    }

    async fn stage(
        &self,
        caller: &Caller,
        accepted: &Accepted,
        file_name: &str,
        body: &mut (dyn ChunkSource + '_),
    ) -> Result<StagedFile> {
        let field = accepted.field;
        if file_name.len() > 255 || file_name.chars().any(char::is_control) {
            return Err(Error::invalid(
                field,
                "the file name must be at most 255 bytes, without control characters",
            ));
        }
        let extension = extension_of(file_name)
            .filter(|e| accepted.extensions.contains(&e.as_str()))
            .ok_or_else(|| {
                Error::invalid(
                    field,
                    format!(
                        "{file_name:?} is not an accepted {} file: .{}",
                        accepted.what,
                        accepted.extensions.join(", .")
                    ),
                )
            })?;
        let _slot = self.upload_slot(&caller.organization.id)?;
        let limit = accepted.limit;
        let key = format!(
            "media/{}/{}.{extension}",
            caller.organization.id,
            uuid::Uuid::now_v7().simple()
        );
        let (blob, size) = self
            .write_blob(key, body, limit, (field, "the upload was dropped"))
            .await?
            .ok_or_else(|| Error::invalid(field, "is empty"))?;
        Ok(StagedFile {
            blob,
            name: file_name.to_owned(),
            size,
            extension,
        })
    }

    /// Writes `body` to a new blob under `key`: the blob, owned, and its size. Past `limit`
    /// bytes nothing is kept and the answer is `413`; a body that breaks off or is too slow
    /// keeps nothing either (the error names `field` and says `lost`), nor does an empty one
    /// (`None`).
    ///
    /// The blob is finished on a task of its own that owns it from before it becomes visible:
    /// a caller that goes away meanwhile leaves it to that owner, which deletes it, after the
    /// blob is in place, never before.
    pub(super) async fn write_blob(
        &self,
        key: String,
        body: &mut (dyn ChunkSource + '_),
        limit: u64,
        (field, lost): (&str, &str),
    ) -> Result<Option<(OwnedBlob, u64)>> {
        let blobs = &self.inner.blobs;
        let mut writer = blobs
            .create(&key)
            .await
            .map_err(|e| Error::unavailable_while("the blob store refused a new blob", e))?;
        let mut size = 0u64;
        while let Some(chunk) = body.next_chunk().await {
            let failure = match chunk {
                Err(error) => Some(error.into_error(field, lost)),
                Ok(chunk) => {
                    size += chunk.len() as u64;
                    if size > limit {
                        Some(Error::PayloadTooLarge { limit_bytes: limit })
                    } else {
                        writer.write(chunk).await.err().map(|e| {
                            self.metrics().blob_error("write");
                            Error::unavailable_while("writing to the blob store", e)
                        })
                    }
                }
            };
            if let Some(error) = failure {
                writer.abort().await;
                return Err(error);
            }
        }
        if size == 0 {
            writer.abort().await;
            return Ok(None);
        }
        let blob = OwnedBlob::new(key, blobs);
        let metrics = self.metrics().clone();
        to_the_end("finishing a blob", async move {
            writer.finish().await.map_err(|e| {
                metrics.blob_error("finish");
                Error::unavailable_while("finishing a blob", e)
            })?;
            Ok(Some((blob, size)))
        })
        .await
    }

    async fn create_media_now(
        &self,
        caller: &Caller,
        kind: MediaKind,
        fields: &UploadFields,
        mut files: Vec<StagedFile>,
        thumbnail: Option<StagedFile>,
    ) -> Result<MediaItem> {
        // A `fileId` (without a file part) names a finished resumable upload: its chunks are
        // copied into one staged file, which then goes the way of a file part.
        let upload = match fields.file_id.as_deref() {
            Some(file_id) if files.is_empty() => {
                let (staged, upload) = self.assemble_upload(caller, kind, file_id).await?;
                files.push(staged);
                Some(upload)
            }
            _ => None,
        };
        let stored: Result<MediaItem> = async {
            let (item, jobs) = self
                .checked_media(
                    caller,
                    kind,
                    fields,
                    (&files, thumbnail.as_ref()),
                    upload.is_some(),
                )
                .await?;
            if !caller.is_test() {
                self.store().insert_media(&item, &jobs).await?;
            }
            Ok(item)
        }
        .await;
        // The file stays only as a stored item's: a refused form, a test key's mock and a
        // failed insert leave nothing behind.
        for staged in files.into_iter().chain(thumbnail) {
            match &stored {
                Ok(_) if !caller.is_test() => staged.blob.keep(),
                _ => self.media().discard_staged(Some(staged)).await,
            }
        }
        let item = stored?;
        if let Some(upload) = upload.filter(|_| !caller.is_test()) {
            self.consume_upload(&upload).await;
        }
        Ok(item)
    }

    /// The media item of a form, its files staged from its file parts (a carousel's images
    /// in order) or (`from_upload`) from the resumable upload its `fileId` names (with
    /// YouTube's custom thumbnail, if the form has one), and the jobs that publish its posts.
    ///
    /// One piece: an upload's checks in the order their errors are reported (the file against
    /// the form, each platform's account and rules, the schedule), building the item and its
    /// jobs from what each check read.
    async fn checked_media(
        &self,
        caller: &Caller,
        kind: MediaKind,
        form: &UploadFields,
        (staged, thumbnail): (&[StagedFile], Option<&StagedFile>),
        from_upload: bool,
    ) -> Result<(MediaItem, Vec<JobRecord>)> {
        match (staged.is_empty(), &form.file_id) {
            (false, Some(_)) if !from_upload => {
                return Err(Error::invalid(
                    "fileId",
                    "give either a file or a fileId, not both",
                ))
            }
            (true, _) => {
                return Err(Error::invalid(
                    "file",
                    "is required (or a fileId of a finished resumable upload)",
                ))
            }
            _ => {}
        }
        let carousel = staged.len() > 1;
        let mut files = Vec::with_capacity(staged.len());
        for (n, part) in staged.iter().enumerate() {
            let file = self
                .stored(kind, part, "file", |error| match error {
                    Refused::Io(_) => refused_in("file", error),
                    refusal if carousel => Error::invalid(
                        "file",
                        format!(
                            "image {} of the carousel ({:?}): {refusal}",
                            n + 1,
                            part.name
                        ),
                    ),
                    refusal => refused_in("file", refusal),
                })
                .await?;
            files.push(file);
        }
        let mut targets = self.targets(caller, form).await?;
        if let Some(thumbnail) = thumbnail {
            let youtube = targets
                .get_mut(&Platform::Youtube)
                .filter(|_| kind == MediaKind::Video)
                .ok_or_else(|| {
                    Error::invalid(
                        "thumbnail",
                        "is YouTube's custom thumbnail: send it with a video whose platforms \
                         include youtube",
                    )
                })?;
            // A JPEG or PNG, as its name says (the extensions `stage_thumbnail` takes).
            let refusal = |error| refused_in("thumbnail", error);
            let stored = self.stored(MediaKind::Image, thumbnail, "thumbnail", refusal);
            youtube.thumbnail = Some(stored.await?);
        }
        let texts = ItemTexts {
            title: form.title.as_deref(),
            description: form.description.as_deref(),
        };
        let all: Vec<&StoredFile> = files.iter().collect();
        let problems: Vec<_> = targets
            .iter()
            .flat_map(|(platform, target)| rules::check(*platform, &all, &target.settings, texts))
            .collect();
        if !problems.is_empty() {
            return Err(Error::invalid_fields(problems));
        }
        let now = self.now();
        let (id, at) = if caller.is_test() {
            let request = super::Fingerprint::of("POST", kind.as_str(), files[0].name.as_bytes());
            (
                MediaId::derived(&self.mock_digest(caller, &request, MediaId::PREFIX, 0)),
                self.mock_time(),
            )
        } else {
            (MediaId::new(), now)
        };
        let status = MediaStatus::initial(form.is_draft, form.scheduled_at, now);
        let run_at = form.scheduled_at.filter(|at| *at > now).unwrap_or(now);
        let mut jobs = Vec::new();
        for (platform, target) in &mut targets {
            let auto_publish = auto_publish(&target.settings);
            for account in &target.accounts {
                // Without autoPublish a person finishes the post, except on TikTok, whose
                // inbox upload is that very flow.
                let runs = auto_publish || *platform == Platform::Tiktok;
                let mut post = Post::new(match (status, runs) {
                    (MediaStatus::Draft, _) => PlatformStatus::Idle,
                    (_, false) => PlatformStatus::Manual,
                    (MediaStatus::Scheduled, true) => PlatformStatus::Idle,
                    _ => PlatformStatus::Pending,
                });
                if !runs {
                    post.error = Some(
                        "autoPublish is off: publish it on the platform or in the dashboard"
                            .to_owned(),
                    );
                }
                if status != MediaStatus::Draft && runs {
                    let mut job = JobRecord::new(
                        caller.organization.id.clone(),
                        MEDIA_PUBLISH,
                        json!({"mediaId": id, "platform": platform, "account": account}),
                        None,
                        now,
                    );
                    job.run_at = run_at;
                    // Two spare attempts: a worker that dies during the last one leaves the
                    // job to the lease rescue, and the next attempt fails the post (see
                    // `PublishHandler`) instead of leaving it `processing`.
                    job.max_attempts = PUBLISH_ATTEMPTS + 2;
                    post.job_id = Some(job.id.clone());
                    jobs.push(job);
                }
                target.posts.insert(account.clone(), post);
            }
        }
        let mut item = MediaItem {
            id,
            organization_id: caller.organization.id.clone(),
            kind,
            title: form.title.clone(),
            description: form.description.clone(),
            status,
            scheduled_at: form.scheduled_at,
            carousel: files.split_off(1),
            file: files.remove(0),
            targets,
            created_at: at,
            updated_at: at,
        };
        item.settle(now);
        Ok((item, jobs))
    }

    /// A staged file of `kind` (the form's part `field`) as stored, once inspecting its bytes
    /// found what its name says; `refusal` names what it found wrong.
    async fn stored(
        &self,
        kind: MediaKind,
        staged: &StagedFile,
        field: &str,
        refusal: impl Fn(Refused) -> Error,
    ) -> Result<StoredFile> {
        let blob = self.open_staged(staged, field).await?;
        let facts = match kind {
            MediaKind::Video => inspect_video(&staged.extension, &*blob)
                .await
                .map(FileFacts::Video),
            MediaKind::Image => inspect_image(&staged.extension, &*blob)
                .await
                .map(FileFacts::Image),
        };
        Ok(StoredFile {
            key: staged.blob.key().to_owned(),
            name: staged.name.clone(),
            size: staged.size,
            facts: facts.map_err(refusal)?,
        })
    }

    /// The bytes of a staged file.
    ///
    /// A staged file that is gone was taken for a leftover: the blob sweep deletes what
    /// nothing records after an hour, and a form still streaming its later parts (a large
    /// carousel, sent slowly) may outlast that. That is the client's `400`, naming `field`.
    async fn open_staged(&self, staged: &StagedFile, field: &str) -> Result<Box<dyn RangeRead>> {
        self.inner
            .blobs
            .open(staged.blob.key())
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::invalid(
                    field,
                    format!(
                        "{:?} was removed before the form ended: a form that takes over an \
                         hour loses its first files; send it again faster, or send large \
                         files as resumable uploads (fileId)",
                        staged.name
                    ),
                ),
                _ => Error::unavailable_while("reading a staged upload", e),
            })
    }

    /// Each chosen platform's plan: its settings and accounts. Named accounts must be
    /// connected channels of that platform; with none named, the one connected channel is
    /// used, and with none or several it is a 400 naming the field. A Pinterest upload without
    /// a `boardId` needs channels that have a default board.
    async fn targets(
        &self,
        caller: &Caller,
        form: &UploadFields,
    ) -> Result<BTreeMap<Platform, PlatformTarget>> {
        let channels = self.store().list_channels(&caller.organization.id).await?;
        let mut problems = Vec::new();
        let mut targets = BTreeMap::new();
        for (platform, choice) in &form.choices {
            let connected: Vec<&str> = channels
                .iter()
                .filter(|c| c.platform == *platform)
                .map(|c| c.account_id.as_str())
                .collect();
            let accounts = match &choice.accounts {
                Some(named) if !named.is_empty() => {
                    for account in named {
                        if !connected.contains(&account.as_str()) {
                            problems.push(crate::error::FieldError {
                                field: accounts_field(*platform),
                                message: format!(
                                    "{} is not a connected {} channel of this organization",
                                    crate::media::settings::shorten(account),
                                    platform.as_str()
                                ),
                            });
                        }
                    }
                    named.clone()
                }
                _ => match connected.as_slice() {
                    [only] => vec![(*only).to_owned()],
                    [] => {
                        problems.push(crate::error::FieldError {
                            field: accounts_field(*platform),
                            message: format!(
                                "no {} channel is connected to this organization",
                                platform.as_str()
                            ),
                        });
                        Vec::new()
                    }
                    several => {
                        problems.push(crate::error::FieldError {
                            field: accounts_field(*platform),
                            message: format!(
                                "{} {} channels are connected; name the ones to use ({})",
                                several.len(),
                                platform.as_str(),
                                several.join(", ")
                            ),
                        });
                        Vec::new()
                    }
                },
            };
            if *platform == Platform::Pinterest && !choice.settings.contains_key("boardId") {
                // A pin goes on a board: the upload's, or each channel's default one.
                for account in &accounts {
                    let boarded = channels.iter().any(|c| {
                        c.platform == Platform::Pinterest
                            && &c.account_id == account
                            && c.default_board.is_some()
                    });
                    if !boarded {
                        problems.push(crate::error::FieldError {
                            field: "pinterest.boardId".into(),
                            message: format!(
                                "a Pinterest pin goes on a board: give the board's id (the \
                                 channel {} has no default board)",
                                crate::media::settings::shorten(account)
                            ),
                        });
                    }
                }
            }
            targets.insert(
                *platform,
                PlatformTarget {
                    status: PlatformStatus::Idle,
                    accounts,
                    settings: choice.settings.clone(),
                    remote_id: None,
                    url: None,
                    error: None,
                    posts: BTreeMap::new(),
                    thumbnail: None,
                },
            );
        }
        if problems.is_empty() {
            Ok(targets)
        } else {
            Err(Error::invalid_fields(problems))
        }
    }

    /// The item `id` if it is the caller's organization's and of `kind`; `404` otherwise
    /// (another organization's item is not found, never refused).
    async fn owned_media(
        &self,
        caller: &Caller,
        kind: MediaKind,
        id: &MediaId,
    ) -> Result<MediaItem> {
        self.store()
            .get_media(id)
            .await?
            .filter(|item| item.organization_id == caller.organization.id && item.kind == kind)
            .ok_or(Error::NotFound(kind.as_str()))
    }

    /// Cancels the jobs of posts a cancel or delete stopped. The posts' state is already
    /// stored and decides (a worker finds them cancelled or gone before any irreversible
    /// call), so a job that cannot be cancelled now is logged, not answered as a failure.
    async fn cancel_jobs(&self, jobs: &[crate::ids::JobId], now: crate::time::Timestamp) {
        for job in jobs {
            if let Err(error) = self.store().cancel_job(job, now).await {
                tracing::warn!(%error, job = %job, "a stopped post's job was not cancelled");
            }
        }
    }

    /// Stores a channel of `organization_id` with these tokens, sealed: a new one, or, for an
    /// account connected before, the same channel (same id) with new tokens, reconnected.
    pub(crate) async fn save_channel(
        &self,
        organization_id: &OrganizationId,
        platform: Platform,
        grant: ChannelGrant,
    ) -> Result<Channel> {
        let now = self.now();
        // Bound to what identifies the channel across reconnections (its id is kept then).
        let owner = channel_owner(organization_id, platform, &grant.account_id);
        let sealer = &self.inner.token_sealer;
        let channel = Channel {
            sealed_access_token: sealer.seal(&owner, &grant.access_token),
            sealed_refresh_token: grant.refresh_token.map(|t| sealer.seal(&owner, &t)),
            id: ChannelId::new(),
            organization_id: organization_id.clone(),
            platform,
            account_id: grant.account_id,
            name: grant.name,
            thumbnail: grant.thumbnail,
            expires_at: grant.expires_at,
            disconnected: None,
            default_board: grant.default_board,
            created_at: now,
            updated_at: now,
        };
        self.store()
            .put_channel(&channel)
            .await?
            .ok_or(Error::NotFound("organization"))
    }
}

impl Media<'_> {
    /// Streams one file part of an upload form of `kind` into the blob store. The name must
    /// have an accepted extension (checked before any byte is stored); past the kind's size
    /// limit the part is dropped and the answer is `413`. The stored bytes are checked later,
    /// by [`Media::create`].
    pub async fn stage_file(
        &self,
        caller: &Caller,
        kind: MediaKind,
        file_name: &str,
        body: &mut (dyn ChunkSource + '_),
    ) -> Result<StagedFile> {
        let staged = self.xf.stage_of_kind(caller, kind, file_name, body).await?;
        self.xf.metrics().upload_bytes("multipart", staged.size);
        Ok(staged)
    }

    /// Streams the `thumbnail` part of a video's upload form (YouTube's custom thumbnail) into
    /// the blob store: a `.jpg`, `.jpeg` or `.png` of at most 2 MB (`413`
    /// past it). Its bytes are checked by [`Media::create`].
    pub async fn stage_thumbnail(
        &self,
        caller: &Caller,
        file_name: &str,
        body: &mut (dyn ChunkSource + '_),
    ) -> Result<StagedFile> {
        let accepted = Accepted {
            field: "thumbnail",
            what: "thumbnail (JPEG or PNG)",
            extensions: THUMBNAIL_EXTENSIONS,
            limit: THUMBNAIL_MAX_BYTES.min(self.xf.inner.media_limits.of(MediaKind::Image)),
        };
        let staged = self.xf.stage(caller, &accepted, file_name, body).await?;
        self.xf.metrics().upload_bytes("multipart", staged.size);
        Ok(staged)
    }

    /// Deletes the staged files of a form that cannot be used.
    pub async fn discard_staged(&self, staged: impl IntoIterator<Item = StagedFile>) {
        for staged in staged {
            staged.blob.discard().await;
        }
    }

    /// Checks an upload form of `kind` (its text fields, read by
    /// [`parse_upload_fields`](crate::media::settings::parse_upload_fields) at the edge, and
    /// the files staged from its file parts, if any: one, or an image carousel's images in
    /// order, and a video's YouTube thumbnail staged by [`Media::stage_thumbnail`], if any) and
    /// stores the media item.
    /// Whatever fails, the staged files are deleted. With a test key nothing is stored and
    /// the answer is a mock (the files are deleted too).
    ///
    /// The work runs on a task of its own: a client that goes away once its form is sent
    /// does not cut it short, so the item is stored with its files or the files are deleted,
    /// never one without the other.
    pub async fn create(
        &self,
        caller: &Caller,
        kind: MediaKind,
        fields: &UploadFields,
        files: Vec<StagedFile>,
        thumbnail: Option<StagedFile>,
    ) -> Result<Vec<UploadedItem>> {
        let xf = self.xf.clone();
        let caller = caller.clone();
        let fields = fields.clone();
        let item = to_the_end("storing a media item", async move {
            xf.create_media_now(&caller, kind, &fields, files, thumbnail)
                .await
        })
        .await?;
        Ok(vec![UploadedItem {
            platforms: item.platforms(),
            id: item.id,
            title: item.title,
            status: item.status,
        }])
    }

    /// `GET /media/videos/{id}` and `GET /media/images/{id}`: an item of the caller's
    /// organization and of that kind.
    pub async fn get(
        &self,
        caller: &Caller,
        kind: MediaKind,
        id: &MediaId,
    ) -> Result<MediaItemView> {
        let item = self.xf.owned_media(caller, kind, id).await?;
        Ok(MediaItemView::from(&item))
    }

    /// `PATCH /media/videos/{id}` and `PATCH /media/images/{id}`: changes `scheduledAt`, the
    /// title, the description and platforms' settings (merged: a key set to `null` is
    /// removed) before any post started, checked as an upload of the changed item would be,
    /// platform rules included; the posts' jobs move to the new time. The platforms, their
    /// accounts and `autoPublish` stay as uploaded. `409 conflict`, naming the platform, once
    /// a post started ([`MediaItem::edit`]).
    pub async fn update(
        &self,
        caller: &Caller,
        kind: MediaKind,
        id: &MediaId,
        patch: &MediaPatch,
    ) -> Result<MediaItemView> {
        let item = self.xf.owned_media(caller, kind, id).await?;
        let edit = checked_edit(&item, patch)?;
        match self.xf.store().edit_media(id, &edit, self.xf.now()).await? {
            MediaEdited::Edited(item) => Ok(MediaItemView::from(&*item)),
            MediaEdited::Refused(reason) => Err(Error::Conflict(reason)),
            MediaEdited::Missing => Err(Error::NotFound(kind.as_str())),
        }
    }

    /// `DELETE /media/videos/{id}` and `DELETE /media/images/{id}`: the item goes, its
    /// unfinished posts' jobs are cancelled (a running attempt stops; one that is not stopped
    /// in time finds no item at its next stored step and sends nothing more), and its file
    /// is deleted from the blob store, which no post needs any more. Posts already published
    /// stay on their platforms. `409 conflict`, naming the platform, while a post's
    /// irreversible call is under way ([`MediaItem::deletable`]).
    pub async fn delete(
        &self,
        caller: &Caller,
        kind: MediaKind,
        id: &MediaId,
    ) -> Result<DeletedMedia> {
        self.xf.owned_media(caller, kind, id).await?;
        let (item, jobs) = match self.xf.store().delete_media(id).await? {
            MediaDelete::Deleted(item, jobs) => (item, jobs),
            MediaDelete::Refused(reason) => return Err(Error::Conflict(reason)),
            MediaDelete::Missing => return Err(Error::NotFound(kind.as_str())),
        };
        self.xf.cancel_jobs(&jobs, self.xf.now()).await;
        for key in item.blob_keys() {
            delete_logged(&*self.xf.inner.blobs, key).await;
        }
        Ok(DeletedMedia {
            id: item.id.clone(),
            deleted: true,
            cancelled_posts: jobs.len(),
        })
    }

    /// `POST /media/videos/{id}/cancel` and `POST /media/images/{id}/cancel`: every post not
    /// yet final stops, all or none ([`MediaItem::cancel`]): `409 conflict`, naming the
    /// platform, when a post's irreversible call was already made or nothing is left to
    /// cancel. The posts' jobs are cancelled in the engine, which stops a running attempt;
    /// one that is not stopped in time finds the post cancelled at its next write, before
    /// any irreversible call (`MediaItem::set_post` keeps a cancel).
    pub async fn cancel(
        &self,
        caller: &Caller,
        kind: MediaKind,
        id: &MediaId,
    ) -> Result<MediaItemView> {
        // Ownership first: another organization's item is not found, never refused.
        self.xf.owned_media(caller, kind, id).await?;
        let now = self.xf.now();
        let (item, jobs) = match self.xf.store().cancel_media(id, now).await? {
            MediaCancel::Cancelled(item, jobs) => (item, jobs),
            MediaCancel::Refused(reason) => return Err(Error::Conflict(reason)),
            MediaCancel::Missing => return Err(Error::NotFound(kind.as_str())),
        };
        self.xf.cancel_jobs(&jobs, now).await;
        Ok(MediaItemView::from(&*item))
    }

    /// `DELETE /media/videos/{id}/posts/{platform}` (and images'): starts deleting the item's
    /// published posts on `platform` (only `account`'s, when given) from the platform, all or
    /// none ([`MediaItem::delete_posts`](crate::media::MediaItem::delete_posts)); the item as
    /// it is then, those posts `deleting` until their `media-delete-post` jobs finish
    /// (`deleted`, and `media.post.deleted`). Posts already being deleted, or deleted, are
    /// left as they are. `404` when the item has no post there; `409 conflict` when the
    /// platform's API cannot delete a post (Instagram, TikTok: the rule is named) or a post is
    /// not published.
    pub async fn delete_posts(
        &self,
        caller: &Caller,
        kind: MediaKind,
        id: &MediaId,
        platform: Platform,
        account: Option<&str>,
    ) -> Result<MediaItemView> {
        if account.is_some_and(|a| {
            a.is_empty() || a.len() > 256 || !a.bytes().all(|b| b.is_ascii_graphic())
        }) {
            return Err(Error::invalid(
                "account",
                "must be 1 to 256 visible ASCII characters when given",
            ));
        }
        let item = self.xf.owned_media(caller, kind, id).await?;
        let has_posts = item.targets.get(&platform).is_some_and(|target| {
            account.map_or(!target.posts.is_empty(), |a| target.posts.contains_key(a))
        });
        if !has_posts {
            return Err(Error::NotFound("post"));
        }
        if let Some(rule) = platform.deletion_refused() {
            return Err(Error::Conflict(format!(
                "{} posts cannot be deleted through its API: {rule}",
                platform.label()
            )));
        }
        let started = self
            .xf
            .store()
            .delete_posts(id, platform, account, self.xf.now())
            .await?;
        match started {
            PostsDelete::Started(item) => Ok(MediaItemView::from(&*item)),
            PostsDelete::Refused(reason) => Err(Error::Conflict(reason)),
            PostsDelete::Missing => Err(Error::NotFound(kind.as_str())),
        }
    }

    /// `GET /media/videos` and `GET /media/images`: newest first, a page at a time.
    pub async fn list(
        &self,
        caller: &Caller,
        kind: MediaKind,
        query: &MediaListQuery,
    ) -> Result<MediaList> {
        let number =
            |field: &str, value: &Option<String>, default: u64, max: u64| match value.as_deref() {
                None => Ok(default),
                // Digits only, as the document's integer: no sign, no spaces, no leading zero.
                Some(text) => Some(text)
                    .filter(|t| t.bytes().all(|b| b.is_ascii_digit()) && !t.starts_with('0'))
                    .and_then(|t| t.parse::<u64>().ok())
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| {
                        Error::invalid(field, format!("must be a whole number from 1 to {max}"))
                    }),
            };
        let page = number("page", &query.page, 1, 1_000_000)?;
        let limit = number("limit", &query.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
        let status = query
            .status
            .as_deref()
            .map(|s| {
                MediaStatus::parse(s.trim()).ok_or_else(|| {
                    Error::invalid(
                        "status",
                        "must be one of draft, pending, scheduled, processing, completed, failed",
                    )
                })
            })
            .transpose()?;
        let platform = query
            .platform
            .as_deref()
            .map(|p| {
                Platform::parse(p.trim())
                    .filter(|p| p.accepts(kind))
                    .ok_or_else(|| {
                        Error::invalid(
                            "platform",
                            match kind {
                                MediaKind::Video => {
                                    "must be one of youtube, instagram, tiktok, linkedin, pinterest"
                                }
                                MediaKind::Image => {
                                    "must be one of instagram, tiktok, linkedin, pinterest"
                                }
                            },
                        )
                    })
            })
            .transpose()?;
        let filter = MediaFilter {
            kind,
            status,
            platform,
        };
        let (items, total) = self
            .xf
            .store()
            .list_media(
                &caller.organization.id,
                &filter,
                (page - 1) * limit,
                limit as usize,
            )
            .await?;
        Ok(MediaList {
            items: items.iter().map(MediaItemView::from).collect(),
            pagination: Pagination {
                total,
                page,
                limit,
                pages: total.div_ceil(limit),
            },
        })
    }

    /// `GET /channels`: the organization's connected channels by platform, with the spec's
    /// fields of each.
    pub async fn channels(&self, caller: &Caller) -> Result<ChannelsView> {
        let channels = self
            .xf
            .store()
            .list_channels(&caller.organization.id)
            .await?;
        Ok(ChannelsView::of(channels))
    }

    /// `GET /media/usage`: this UTC month's media meters of the caller's organization (the
    /// same meters `GET /usage` shows among its counters).
    pub async fn usage(&self, caller: &Caller) -> Result<MediaUsage> {
        let period = self.xf.now().month_key();
        let org = &caller.organization;
        let counters = self.xf.store().get_usage(&org.id, &period).await?;
        Ok(MediaUsage {
            period,
            plan: org.plan.clone(),
            uploads: counters.media_uploads,
            bytes: counters.media_bytes,
            posts_published: counters.posts_published,
            posts_deleted: counters.posts_deleted,
        })
    }
}

impl Admin<'_> {
    /// `POST /admin/organizations/{orgId}/channels`: connects (or connects again) a social
    /// account; its tokens are sealed with the host's secret.
    pub async fn connect_channel(
        &self,
        organization_id: &OrganizationId,
        input: NewChannel,
    ) -> Result<AdminChannelView> {
        let platform = Platform::parse(input.platform.trim()).ok_or_else(|| {
            Error::invalid(
                "platform",
                "must be one of youtube, instagram, tiktok, linkedin, pinterest",
            )
        })?;
        let account_id = input
            .account_id
            .or(input.channel_id)
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty() && a.len() <= 256 && !a.chars().any(char::is_control))
            .ok_or_else(|| {
                Error::invalid("accountId", "is required: the platform's account id (channelId for YouTube), 1 to 256 characters")
            })?;
        let name = input
            .display_name
            .or(input.title)
            .or(input.username)
            .or(input.name)
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty() && n.chars().count() <= 200)
            .ok_or_else(|| Error::invalid("displayName", "is required: 1 to 200 characters"))?;
        let thumbnail = match input.thumbnail.map(|t| t.trim().to_owned()) {
            Some(url) if !url.is_empty() => match url::Url::parse(&url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Some(url),
                _ => {
                    return Err(Error::invalid(
                        "thumbnail",
                        "must be an absolute http or https URL",
                    ))
                }
            },
            _ => None,
        };
        let token = |field: &str, value: &str| -> Result<String> {
            let value = value.trim();
            if value.is_empty()
                || value.len() > 8192
                || !value.bytes().all(|b| b.is_ascii_graphic())
            {
                Err(Error::invalid(
                    field,
                    "must be 1 to 8192 visible ASCII characters",
                ))
            } else {
                Ok(value.to_owned())
            }
        };
        let access_token = token("accessToken", &input.access_token)?;
        let refresh_token = input
            .refresh_token
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .map(|t| token("refreshToken", t))
            .transpose()?;
        let expires_at = input
            .expires_at
            .as_deref()
            .map(|t| {
                crate::time::Timestamp::parse_rfc3339(t.trim())
                    .ok_or_else(|| Error::invalid("expiresAt", "must be an RFC 3339 time"))
            })
            .transpose()?;
        let stored = self
            .xf
            .save_channel(
                organization_id,
                platform,
                ChannelGrant {
                    account_id,
                    name,
                    thumbnail,
                    access_token,
                    refresh_token,
                    expires_at,
                    default_board: None,
                },
            )
            .await?;
        Ok(stored.into())
    }

    /// `PATCH /admin/channels/{channelId}`: sets (or clears) a Pinterest channel's default
    /// board, which its pins go on when an upload names none. Another platform's channel is
    /// `404`, as an unknown id.
    pub async fn update_channel(
        &self,
        id: &ChannelId,
        changes: crate::media::api::ChannelChanges,
    ) -> Result<AdminChannelView> {
        let board = match changes.default_board.as_deref().map(str::trim) {
            None => None,
            Some(board)
                if !board.is_empty()
                    && board.len() <= 64
                    && board.bytes().all(|b| b.is_ascii_graphic()) =>
            {
                Some(board)
            }
            Some(_) => {
                return Err(Error::invalid(
                    "defaultBoard",
                    "must be a board id: 1 to 64 visible ASCII characters, or null",
                ))
            }
        };
        // Only Pinterest channels have boards: another channel's id is not one of them.
        let updated = self
            .xf
            .store()
            .set_channel_default_board(id, board, self.xf.now())
            .await?
            .ok_or(Error::NotFound(ChannelId::RESOURCE))?;
        Ok(updated.into())
    }
}

/// What a channel is stored with: the account and its tokens, in clear (sealed on the way in).
#[derive(Clone)]
pub(crate) struct ChannelGrant {
    pub account_id: String,
    pub name: String,
    pub thumbnail: Option<String>,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<crate::time::Timestamp>,
    pub default_board: Option<String>,
}

/// The fields of a `PATCH` of `item`, checked as the upload form of the changed item would be
/// (`parse_upload_fields`, then each platform's rules): every problem named by its field.
///
/// One piece: the patch is merged into the item as an upload of the changed item would send it,
/// then checked as that upload would be; the merge and the check share the merged form.
fn checked_edit(item: &MediaItem, patch: &MediaPatch) -> Result<crate::media::MediaEdit> {
    use crate::error::FieldError;
    use serde_json::Value;
    let mut problems = Vec::new();
    let mut problem = |field: String, message: &str| {
        problems.push(FieldError {
            field,
            message: message.to_owned(),
        })
    };
    // The form an upload of the changed item would send: what the patch gives, and the rest
    // as stored (so that the rules see the item as it will be).
    let platforms: Vec<&str> = item.targets.keys().map(|p| p.as_str()).collect();
    let mut fields = vec![("platforms".to_owned(), json!(platforms).to_string())];
    let mut settings = BTreeMap::new();
    for (platform, target) in &item.targets {
        settings.insert(*platform, target.settings.clone());
    }
    let texts = [
        ("title", &patch.title),
        ("description", &patch.description),
        ("scheduledAt", &patch.scheduled_at),
    ];
    for (field, given) in texts {
        if let Some(Some(text)) = given {
            fields.push((field.to_owned(), text.clone()));
        }
    }
    for (platform, changes) in &patch.settings {
        let name = platform.as_str();
        let Some(stored) = settings.get_mut(platform) else {
            problem(
                name.to_owned(),
                "is not a platform of this item; the platforms cannot change (cancel it and \
                 upload again)",
            );
            continue;
        };
        let before = stored.clone();
        for (setting, change) in changes {
            let field = format!("{name}.{setting}");
            match setting.as_str() {
                "accounts" | "channels" => {
                    problem(field, "the accounts of an item cannot change");
                }
                "autoPublish"
                    if (change.is_boolean() || change.is_null())
                        && change.as_bool().unwrap_or(true) != auto_publish(&before) =>
                {
                    problem(field, "cannot change after the upload");
                }
                "boardId" if change.is_null() && before.contains_key("boardId") => {
                    problem(field, "cannot be removed; give another board");
                }
                _ if change.is_null() => {
                    stored.remove(setting);
                }
                _ => {
                    stored.insert(setting.clone(), change.clone());
                }
            }
        }
    }
    let kept = [
        ("title", patch.title.is_none(), &item.title),
        (
            "description",
            patch.description.is_none(),
            &item.description,
        ),
    ];
    for (field, kept, stored) in kept {
        if let (true, Some(text)) = (kept, stored) {
            fields.push((field.to_owned(), text.clone()));
        }
    }
    for (platform, stored) in &settings {
        fields.push((
            platform.as_str().to_owned(),
            Value::Object(stored.clone()).to_string(),
        ));
    }
    if !problems.is_empty() {
        return Err(Error::invalid_fields(problems));
    }
    let form = parse_upload_fields(item.kind, &fields)?;
    let texts = ItemTexts {
        title: form.title.as_deref(),
        description: form.description.as_deref(),
    };
    let files: Vec<&StoredFile> = item.files().collect();
    let problems: Vec<_> = form
        .choices
        .iter()
        .flat_map(|(platform, choice)| rules::check(*platform, &files, &choice.settings, texts))
        .collect();
    if !problems.is_empty() {
        return Err(Error::invalid_fields(problems));
    }
    Ok(crate::media::MediaEdit {
        based_on: Some(item.updated_at),
        title: patch.title.is_some().then(|| form.title.clone()),
        description: patch
            .description
            .is_some()
            .then(|| form.description.clone()),
        scheduled_at: patch.scheduled_at.is_some().then_some(form.scheduled_at),
        settings: form
            .choices
            .into_iter()
            .filter(|(platform, _)| patch.settings.contains_key(platform))
            .map(|(platform, choice)| (platform, choice.settings))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::media::inspect::{VideoContainer, VideoFacts};
    use crate::media::{PlatformStatus, PlatformTarget, StoredFile};

    /// A scheduled video for YouTube, TikTok and Pinterest, nothing of it sent.
    fn item() -> MediaItem {
        let now = crate::time::Timestamp::from_datetime(
            chrono::DateTime::parse_from_rfc3339("2026-11-27T09:00:00Z")
                .unwrap()
                .with_timezone(&chrono::Utc),
        );
        let targets = [Platform::Youtube, Platform::Tiktok, Platform::Pinterest]
            .into_iter()
            .map(|platform| {
                let mut settings = serde_json::Map::new();
                if platform == Platform::Pinterest {
                    settings.insert("boardId".into(), "board-9".into());
                }
                let account = format!("{}-account", platform.as_str());
                let target = PlatformTarget {
                    status: PlatformStatus::Idle,
                    accounts: vec![account.clone()],
                    settings,
                    remote_id: None,
                    url: None,
                    error: None,
                    posts: [(account, Post::new(PlatformStatus::Idle))].into(),
                    thumbnail: None,
                };
                (platform, target)
            })
            .collect();
        MediaItem {
            id: MediaId::new(),
            organization_id: OrganizationId::new(),
            kind: MediaKind::Video,
            title: Some("Launch".into()),
            description: None,
            status: MediaStatus::Scheduled,
            scheduled_at: Some(now.plus(chrono::Duration::days(1))),
            file: StoredFile {
                key: "media/k".into(),
                name: "launch.mp4".into(),
                size: 5_000_000,
                facts: FileFacts::Video(VideoFacts {
                    container: VideoContainer::Mp4,
                    duration_ms: 20_000,
                    width: 1080,
                    height: 1920,
                    rotation: 0,
                    video_codec: "avc1".into(),
                    audio_codec: Some("mp4a".into()),
                    frame_rate_millis: 30_000,
                }),
            },
            carousel: Vec::new(),
            targets,
            created_at: now,
            updated_at: now,
        }
    }

    /// The names a change reads, and others.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "title",
                "description",
                "scheduledAt",
                "youtube",
                "tiktok",
                "pinterest",
                "instagram",
                "platforms",
                "privacy",
                "title",
                "caption",
                "coverTimestampMs",
                "firstComment",
                "autoPublish",
                "channels",
                "accounts",
                "boardId",
            ])
            .prop_map(str::to_owned),
            ".{0,12}",
        ]
    }

    /// JSON of any shape, with the values a change's fields take near their edges.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,40}".prop_map(Value::from),
            prop::sample::select(vec![
                "2026-12-01T09:30:00Z",
                "2026-11-27T08:00:00Z",
                "tomorrow",
                "SELF_ONLY",
                "PUBLIC_TO_EVERYONE",
                "public",
                "<b>",
                "",
            ])
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(key(), inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever a `PATCH` body is, it is a checked change the item takes, or a `400`
        /// naming each problem's field: never a panic, never another error.
        #[test]
        fn any_patch_body_is_a_change_the_item_takes_or_a_named_refusal(body in json()) {
            let item = item();
            match MediaPatch::from_json(&body).and_then(|patch| checked_edit(&item, &patch)) {
                Ok(edit) => {
                    let mut changed = item.clone();
                    let now = item.updated_at;
                    prop_assert!(changed.edit(&edit, now).is_ok(), "{body}");
                }
                Err(Error::Validation { details, .. }) => {
                    prop_assert!(!details.is_empty(), "{body}");
                    prop_assert!(details.iter().all(|d| !d.field.is_empty()), "{body}");
                }
                Err(other) => prop_assert!(false, "{body}: {other:?}"),
            }
        }

        /// A change of one setting to a valid value is taken as given.
        #[test]
        fn a_valid_cover_or_comment_change_is_taken(ms in 0u64..20_000, text in "[a-z ]{1,40}") {
            let item = item();
            let body = serde_json::json!({
                "tiktok": {"coverTimestampMs": ms},
                "youtube": {"firstComment": text},
            });
            let patch = MediaPatch::from_json(&body).unwrap();
            let edit = checked_edit(&item, &patch).unwrap();
            prop_assert_eq!(&edit.settings[&Platform::Tiktok]["coverTimestampMs"], &Value::from(ms));
            let comment = edit.settings[&Platform::Youtube]["firstComment"].as_str();
            prop_assert_eq!(comment, Some(text.as_str()));
        }
    }
}
