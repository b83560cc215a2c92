//! The bare crawler's page reader, shared by the `corpus` and `page_reader` benchmarks: the
//! least a crawler reads of a page.

use std::sync::{Arc, Mutex};

use lol_html::{element, HtmlRewriter, Settings};

/// The `href` of every `<a href>` of a page, as written, read by lol_html with that one
/// selector.
pub fn hrefs(body: &[u8]) -> Vec<String> {
    let found: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&found);
    let settings = Settings::new().append_element_content_handler(element!("a[href]", move |el| {
        if let Some(href) = el.get_attribute("href") {
            sink.lock().expect("links").push(href);
        }
        Ok(())
    }));
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    let _ = rewriter.write(body);
    let _ = rewriter.end();
    let hrefs = std::mem::take(&mut *found.lock().expect("links"));
    hrefs
}
