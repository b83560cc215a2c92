//! Reading an upload form (`multipart/form-data`): its text fields, each read only up to its
//! limit, and its `file` part (several for an image carousel; a video's `thumbnail` too),
//! streamed to the blob store as they arrive.

use axum::extract::Request;
use sha2::{Digest, Sha256};
use xf_core::media::rules::CAROUSEL_MAX;
use xf_core::media::MediaKind;
use xf_core::params::IdempotencyKey;
use xf_core::{BodyError, Caller, ChunkSource, Error, Fingerprint, MediaLimits, StagedFile, Xf};

use crate::multipart::{FormError, FormReader, TextField};

/// An upload form as read. It owns the staged files: a form dropped before an item keeps the
/// files (a refusal, a replay, a client gone) deletes them.
pub struct UploadForm {
    /// The request's path, part of the fingerprint.
    path: String,
    /// `Idempotency-Key`, if sent.
    pub idempotency_key: Option<IdempotencyKey>,
    /// The text fields, in the order sent.
    pub fields: Vec<(String, String)>,
    /// The file parts, staged in the blob store, in order: a video's one, or an image's one
    /// or several (a carousel, at most [`CAROUSEL_MAX`]).
    pub files: Vec<StagedFile>,
    /// The `thumbnail` part (YouTube's custom thumbnail of a video), staged.
    pub thumbnail: Option<StagedFile>,
    /// The files' SHA-256, taken on the way when the request is idempotent (its fingerprint
    /// covers the files' bytes).
    digest: Option<[u8; 32]>,
}

impl UploadForm {
    /// Reads the form of `request`, staging its file as a `kind` upload of `caller`.
    pub async fn read(
        xf: &Xf,
        caller: &Caller,
        kind: MediaKind,
        request: Request,
    ) -> Result<UploadForm, Error> {
        let path = crate::request_id::service_path(request.uri().path()).to_owned();
        let idempotency_key = crate::extract::idempotency_key(request.headers())?;
        let limits = xf.media_limits();
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut reader = FormReader::new(
            request.into_body(),
            content_type.as_deref(),
            limits.max_form_parts,
        )
        .map_err(|message| Error::invalid("body", message))?;
        let mut hasher = idempotency_key.as_ref().map(|_| Sha256::new());
        let mut form = UploadForm {
            path,
            idempotency_key,
            fields: Vec::new(),
            files: Vec::new(),
            thumbnail: None,
            digest: None,
        };
        let read = form
            .read_parts(xf, caller, kind, &limits, &mut reader, hasher.as_mut())
            .await;
        if let Err(error) = read {
            // The form cannot be used: files already stored go before the answer does.
            xf.media()
                .discard_staged(std::mem::take(&mut form.files))
                .await;
            xf.media().discard_staged(form.thumbnail.take()).await;
            return Err(error);
        }
        form.digest = hasher.map(|hasher| hasher.finalize().into());
        Ok(form)
    }

    /// Reads the parts: text fields into `fields`, the file parts staged into `files`.
    async fn read_parts(
        &mut self,
        xf: &Xf,
        caller: &Caller,
        kind: MediaKind,
        limits: &MediaLimits,
        reader: &mut FormReader,
        mut hasher: Option<&mut Sha256>,
    ) -> Result<(), Error> {
        let mut text_bytes = 0usize;
        while let Some(part) = reader.next_part().await.map_err(FormError::into_error)? {
            if part.name == "file" {
                match (kind, self.files.len()) {
                    (MediaKind::Video, 1..) => {
                        return Err(Error::invalid("file", "is given more than once"))
                    }
                    (MediaKind::Image, CAROUSEL_MAX..) => {
                        return Err(Error::invalid(
                            "file",
                            format!("a carousel takes at most {CAROUSEL_MAX} images"),
                        ))
                    }
                    _ => {}
                }
                let file_name = part.file_name.ok_or_else(|| {
                    Error::invalid("file", "must be a file part with a file name")
                })?;
                let mut chunks = FileChunks(reader, hasher.as_deref_mut());
                let staged = xf
                    .media()
                    .stage_file(caller, kind, &file_name, &mut chunks)
                    .await?;
                self.files.push(staged);
                continue;
            }
            if part.name == "thumbnail" && kind == MediaKind::Video {
                if self.thumbnail.is_some() {
                    return Err(Error::invalid("thumbnail", "is given more than once"));
                }
                let file_name = part.file_name.ok_or_else(|| {
                    Error::invalid("thumbnail", "must be a file part with a file name")
                })?;
                let mut chunks = FileChunks(reader, hasher.as_deref_mut());
                self.thumbnail = Some(
                    xf.media()
                        .stage_thumbnail(caller, &file_name, &mut chunks)
                        .await?,
                );
                continue;
            }
            let room = limits
                .max_form_field_bytes
                .min(limits.max_form_text_bytes - text_bytes);
            let text = match reader.text(room).await.map_err(FormError::into_error)? {
                TextField::Text(text) => text,
                TextField::NotUtf8 => return Err(Error::invalid(&part.name, "is not UTF-8 text")),
                TextField::TooLong if room < limits.max_form_field_bytes => {
                    return Err(Error::invalid(
                        "body",
                        format!(
                            "the form's text fields are longer than {} bytes in all",
                            limits.max_form_text_bytes
                        ),
                    ))
                }
                TextField::TooLong => {
                    return Err(Error::invalid(
                        &part.name,
                        format!("is longer than {} bytes", limits.max_form_field_bytes),
                    ))
                }
            };
            text_bytes += text.len();
            self.fields.push((part.name, text));
        }
        Ok(())
    }

    /// The form's fingerprint: its path, its text fields (in order of name), and the files'
    /// names and sizes and the SHA-256 of their bytes.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut sorted: Vec<&(String, String)> = self.fields.iter().collect();
        sorted.sort();
        let mut canonical = Vec::new();
        for (name, value) in sorted {
            for part in [name.as_bytes(), value.as_bytes()] {
                canonical.extend_from_slice(&(part.len() as u64).to_be_bytes());
                canonical.extend_from_slice(part);
            }
        }
        let files = self.files.iter().map(|file| ("file", file));
        for (part, file) in files.chain(self.thumbnail.iter().map(|file| ("thumbnail", file))) {
            canonical.extend_from_slice(part.as_bytes());
            canonical.extend_from_slice(file.name().as_bytes());
            canonical.extend_from_slice(&file.size().to_be_bytes());
        }
        if !self.files.is_empty() || self.thumbnail.is_some() {
            canonical.extend_from_slice(&self.digest.unwrap_or_default());
        }
        Fingerprint::of("POST", &self.path, &canonical)
    }
}

/// A form's file part, chunk by chunk, hashed on the way when the request is idempotent.
struct FileChunks<'a, 'h>(&'a mut FormReader, Option<&'h mut Sha256>);

#[async_trait::async_trait]
impl ChunkSource for FileChunks<'_, '_> {
    async fn next_chunk(&mut self) -> Option<Result<bytes::Bytes, BodyError>> {
        let chunk = self
            .0
            .next_chunk()
            .await
            .map_err(FormError::into_body_error)
            .transpose();
        if let (Some(Ok(bytes)), Some(hasher)) = (&chunk, self.1.as_deref_mut()) {
            hasher.update(bytes);
        }
        chunk
    }
}
