//! The facade's side of publishing: the `media-publish` handler over its parts, and the
//! signed URLs platforms pull media from. The handler itself is
//! [`crate::media::publishing`].

use std::sync::Arc;

use super::Xf;
use crate::error::{Error, Result};
use crate::ids::MediaId;
use crate::media::inspect::RangeRead;
use crate::media::publishing::PublishHandler;
use crate::time::Timestamp;

impl Xf {
    /// The handler of `media-publish` and `media-delete-post` jobs over this facade's parts.
    pub fn publish_handler(&self) -> PublishHandler {
        PublishHandler::new(
            Arc::clone(&self.inner.publishing),
            self.inner.publish_options,
        )
    }

    /// A signed URL of the item's file `index` (`0` for its file, `1`… for a carousel's
    /// other images) under the public base URL (`/m/{token}`), valid until `expires_at`.
    pub fn media_file_url(&self, id: &MediaId, index: usize, expires_at: Timestamp) -> String {
        self.inner.publishing.media_urls.url(id, index, expires_at)
    }

    /// The file a signed media URL's token names, with its MIME type, if the signature is
    /// right and the URL has not expired; `404` otherwise (a wrong signature is not told
    /// apart from a missing file).
    pub async fn open_media_file(&self, token: &str) -> Result<MediaFile> {
        let missing = || Error::NotFound("media file");
        let (id, index) = self
            .inner
            .publishing
            .media_urls
            .check(token, self.now())
            .ok_or_else(missing)?;
        let item = self.store().get_media(&id).await?.ok_or_else(missing)?;
        let file = item.files().nth(index).ok_or_else(missing)?;
        let reader = self
            .inner
            .blobs
            .open(&file.key)
            .await
            .map_err(|_| missing())?;
        Ok(MediaFile {
            content_type: file.facts.content_type(),
            reader,
        })
    }
}

/// A media file opened through a signed URL.
pub struct MediaFile {
    /// Its MIME type.
    pub content_type: &'static str,
    /// Its bytes.
    pub reader: Box<dyn RangeRead>,
}

impl std::fmt::Debug for MediaFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaFile")
            .field("content_type", &self.content_type)
            .field("len", &self.reader.len())
            .finish()
    }
}
