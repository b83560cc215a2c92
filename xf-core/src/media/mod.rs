//! The media publishing API: media items, their files and per-platform plans, connected
//! channels, and the checks an upload goes through.

pub mod api;
pub mod blob;
pub mod events;
pub(crate) mod file_url;
pub mod inspect;
#[cfg(feature = "publishing")]
pub mod platforms;
pub mod publish;
pub mod publishing;
pub mod rules;
#[cfg(feature = "s3")]
pub mod s3;
pub mod settings;

pub use crate::model::media::{
    Channel, FailureSource, FileFacts, MediaEdit, MediaItem, MediaKind, MediaStatus, Platform,
    PlatformStatus, PlatformTarget, Post, PostFailure, PostStage, Rescheduled, StoredFile, Upload,
    UploadPart,
};
