//! Sample media files made by `ffmpeg` (`XF_FFMPEG`, else `ffmpeg` on the `PATH`; `.ci/test`
//! installs it), and multipart bodies of upload forms.

use std::path::PathBuf;
use std::process::Command;

/// The `ffmpeg` to run.
fn ffmpeg() -> String {
    std::env::var("XF_FFMPEG").unwrap_or_else(|_| "ffmpeg".to_owned())
}

fn scratch(extension: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "xf-sample-{}.{extension}",
        uuid::Uuid::now_v7().simple()
    ))
}

fn run(args: &[&str]) {
    let status = Command::new(ffmpeg())
        .args(["-v", "error", "-y"])
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("ffmpeg could not run (install it, or set XF_FFMPEG): {e}"));
    assert!(status.success(), "ffmpeg {args:?} failed");
}

/// A video of `seconds` at `width`×`height` (H.264, with an AAC track when `audio`), in an
/// `mp4` or `mov` container, whose display matrix turns it by `rotation` degrees.
pub fn video(
    container: &str,
    width: u32,
    height: u32,
    seconds: u32,
    audio: bool,
    rotation: u32,
) -> Vec<u8> {
    let encoded = scratch(container);
    let size = format!("testsrc=size={width}x{height}:rate=24:duration={seconds}");
    let tone = format!("sine=frequency=440:duration={seconds}");
    let encoded_path = encoded.to_str().expect("a UTF-8 path");
    let mut args = vec!["-f", "lavfi", "-i", &size];
    if audio {
        args.extend(["-f", "lavfi", "-i", &tone, "-c:a", "aac"]);
    }
    args.extend(["-c:v", "libx264", "-pix_fmt", "yuv420p", encoded_path]);
    run(&args);
    let bytes = if rotation == 0 {
        std::fs::read(&encoded).expect("the encoded video")
    } else {
        // The display matrix is written on a remux (ffmpeg 5's `rotate` metadata).
        let rotated = scratch(container);
        let rotate = format!("rotate={rotation}");
        run(&[
            "-i",
            encoded_path,
            "-c",
            "copy",
            "-metadata:s:v:0",
            &rotate,
            rotated.to_str().expect("a UTF-8 path"),
        ]);
        let bytes = std::fs::read(&rotated).expect("the rotated video");
        let _ = std::fs::remove_file(rotated);
        bytes
    };
    let _ = std::fs::remove_file(encoded);
    bytes
}

/// A silent H.264 video of `seconds` at `width`×`height` covered in noise, so that it does
/// not compress: tens of kilobytes per second even when small (LinkedIn takes no video under
/// 75 KB).
pub fn grainy_video(container: &str, width: u32, height: u32, seconds: u32) -> Vec<u8> {
    let path = scratch(container);
    let size = format!("testsrc=size={width}x{height}:rate=10:duration={seconds}");
    run(&[
        "-f",
        "lavfi",
        "-i",
        &size,
        "-vf",
        // Noise on 10 frames a second, each shown 2.4 times: 24 fps as platforms want, at the
        // size of the 10 noisy frames.
        "noise=alls=60:allf=t+u,fps=24",
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
        path.to_str().expect("a UTF-8 path"),
    ]);
    let bytes = std::fs::read(&path).expect("the video");
    let _ = std::fs::remove_file(path);
    bytes
}

/// Three JPEGs that suit every platform's carousel (square, 4:5 and 6:5, each at most 1080p),
/// for carousel uploads.
pub fn carousel_jpegs() -> Vec<Vec<u8>> {
    [(1080, 1080), (1080, 1350), (1200, 1000)]
        .iter()
        .map(|(width, height)| image("jpg", *width, *height))
        .collect()
}

/// An image of `width`×`height` in `format` (`png`, `jpg` or `webp`).
pub fn image(format: &str, width: u32, height: u32) -> Vec<u8> {
    let path = scratch(format);
    let size = format!("testsrc=size={width}x{height}");
    run(&[
        "-f",
        "lavfi",
        "-i",
        &size,
        "-frames:v",
        "1",
        path.to_str().expect("a UTF-8 path"),
    ]);
    let bytes = std::fs::read(&path).expect("the image");
    let _ = std::fs::remove_file(path);
    bytes
}

/// The boundary of [`multipart`] bodies.
pub const BOUNDARY: &str = "xf-test-boundary-7MA4YWxkTrZu0gW";

/// A `multipart/form-data` body: the text `fields`, then the `file` part (name and bytes),
/// if any. Returns the `Content-Type` and the body.
pub fn multipart(fields: &[(&str, &str)], file: Option<(&str, &[u8])>) -> (String, Vec<u8>) {
    let files: Vec<(&str, &str, &[u8])> = file
        .into_iter()
        .map(|(file_name, bytes)| ("file", file_name, bytes))
        .collect();
    multipart_parts(fields, &files)
}

/// A `multipart/form-data` body of `fields` and file parts, each `(part name, file name,
/// bytes)`; its content type and bytes.
pub fn multipart_parts(
    fields: &[(&str, &str)],
    files: &[(&str, &str, &[u8])],
) -> (String, Vec<u8>) {
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    for (part, file_name, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{part}\"; filename=\"{file_name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={BOUNDARY}"), body)
}
