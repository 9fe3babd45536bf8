//! The page: one HTML template, one script and one style sheet, assembled
//! either for the endpoint (script and style served as same-origin
//! resources, data fetched from the endpoint) or as a single file
//! (everything inlined, the data embedded as JSON).

use std::io::{self, Write};

use super::json::Json;
use super::model::{View, ViewOptions};
use super::read::Stacks;
use crate::profile::{Profile, ProfileKind};

const TEMPLATE: &str = include_str!("page.html");
/// The page's script, served as `/debug/pprof/ui/viewer.js`.
pub(crate) const SCRIPT: &str = include_str!("viewer.js");
/// The page's style sheet, served as `/debug/pprof/ui/viewer.css`.
pub(crate) const STYLE: &str = include_str!("viewer.css");
/// The page's icon, served as `/debug/pprof/ui/favicon.svg` (so that the
/// browser's request for an icon stays on the endpoint and succeeds).
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) const FAVICON: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\"><rect width=\"16\" height=\"5\" y=\"11\" fill=\"#e8590c\"/><rect width=\"11\" height=\"5\" y=\"6\" fill=\"#f59f00\"/><rect width=\"6\" height=\"5\" y=\"1\" fill=\"#fcc419\"/></svg>";

/// The policy of the HTML file: nothing is loaded, only its own inline
/// script and style run.
pub(crate) const FILE_POLICY: &str =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

/// Where a page is shown.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum Page {
    /// Served by the endpoint: fetches its data from it.
    Served,
}

#[cfg_attr(not(feature = "http"), allow(dead_code))]
impl Page {
    /// The served page's HTML.
    pub(crate) fn html(&self) -> String {
        match self {
            Page::Served => fill(
                "live",
                "<link rel=\"icon\" href=\"/debug/pprof/ui/favicon.svg\">\n\
                 <link rel=\"stylesheet\" href=\"/debug/pprof/ui/viewer.css\">\n\
                 <script src=\"/debug/pprof/ui/viewer.js\" defer></script>",
                "",
            ),
        }
    }
}

fn fill(title: &str, head: &str, body_end: &str) -> String {
    TEMPLATE
        .replace("{{TITLE}}", &html_escape(title))
        .replace("{{HEAD}}", head)
        .replace("{{BODY_END}}", body_end)
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes the viewer as one self-contained HTML file: the page with its
/// script and style inlined and `views` (one tab each) and the threads
/// waiting (`waiting`, a [`crate::profile::waiting()`] profile or a pprof
/// file of one) embedded. Opened from disk, mailed or attached to a bug, it
/// shows the same tables and flame graphs as the endpoint's page, offline:
/// its `Content-Security-Policy` lets it load nothing.
///
/// # Errors
///
/// Any error of `w`.
///
/// # Examples
///
/// ```
/// use syncprof::viewer::{Stacks, View, ViewOptions};
///
/// let options = ViewOptions::default();
/// let mutex = View::new("mutex", &Stacks::from_profile(&syncprof::profile::mutex()), &options)?;
/// let block = View::new("block", &Stacks::from_profile(&syncprof::profile::block()), &options)?;
/// let mut file = Vec::new(); // or std::fs::File::create("contention.html")?
/// syncprof::viewer::write_html(&mut file, "my service", &[mutex, block], None)?;
/// assert!(String::from_utf8(file)?.starts_with("<!DOCTYPE html>"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_html(
    mut w: impl Write,
    title: &str,
    views: &[View],
    waiting: Option<&Stacks>,
) -> io::Result<()> {
    let mut data = Json::new();
    data.raw("{").key("title").string(title);
    data.raw(",").key("profiles").raw("[");
    for (i, view) in views.iter().enumerate() {
        data.sep(i == 0);
        view.write_json(&mut data);
    }
    data.raw("],").key("waiting");
    match waiting {
        Some(stacks) => data.raw(&waiting_json(stacks)),
        None => data.raw("null"),
    };
    data.raw("}");
    // The script and style are the project's own; they never hold the
    // sequences that would end their element early (tests check this).
    debug_assert!(!SCRIPT.contains("</script") && !STYLE.contains("</style"));
    let head = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{FILE_POLICY}\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<style>\n{STYLE}</style>"
    );
    let body_end = format!(
        "<script type=\"application/json\" id=\"syncprof-data\">{}</script>\n<script>\n{SCRIPT}</script>",
        data.out
    );
    w.write_all(fill(title, &head, &body_end).as_bytes())?;
    w.flush()
}

/// The threads waiting in a waiting profile, as the page's JSON: longest
/// wait first, each with its labels (`thread`, `holder`, `kind`, `lock`, …)
/// and its stack leaf first.
pub(crate) fn waiting_json(stacks: &Stacks) -> String {
    let delay = stacks.value_index("delay").unwrap_or(stacks.default_value);
    let mut order: Vec<usize> = (0..stacks.samples.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(stacks.samples[i].values.get(delay).copied()));
    let mut j = Json::new();
    j.raw("{").key("waiters").raw("[");
    for (n, &i) in order.iter().enumerate() {
        let sample = &stacks.samples[i];
        let labels = &stacks.labelsets[sample.labelset as usize];
        let label = |key: &str| {
            labels
                .iter()
                .find(|(k, _)| k == key)
                .map_or("", |(_, v)| v.as_str())
        };
        j.sep(n == 0).raw("{").key("thread").string(label("thread"));
        j.raw(",").key("holder").string(label("holder"));
        j.raw(",").key("kind").string(label("kind"));
        j.raw(",").key("lock").string(label("lock"));
        j.raw(",")
            .key("waited_nanos")
            .int(sample.values.get(delay).copied().unwrap_or(0));
        j.raw(",").key("labels").raw("[");
        for (m, (k, v)) in labels.iter().enumerate() {
            j.sep(m == 0).raw("[").string(k).raw(",").string(v).raw("]");
        }
        j.raw("],").key("stack").raw("[");
        for (m, &f) in sample.frames.iter().rev().enumerate() {
            let f = &stacks.functions[f as usize];
            j.sep(m == 0)
                .raw("[")
                .string(&f.short)
                .raw(",")
                .string(&f.name)
                .raw(",")
                .string(&f.file)
                .raw("]");
        }
        j.raw("]}");
    }
    j.raw("]}");
    j.out
}

/// `write_html` on a [`Profile`] snapshot: the viewer as one offline file.
/// (A trait because [`Profile`] lives in the engine crate.)
pub trait WriteHtml {
    /// Writes this profile as a self-contained HTML file of the viewer (see
    /// [`crate::viewer`]): top table, flame graph and label filters, opened
    /// offline in any browser. A waiting profile
    /// ([`crate::profile::waiting()`]) is shown as its list of waiting
    /// threads.
    ///
    /// # Errors
    ///
    /// Any error of `w`.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::viewer::WriteHtml as _;
    ///
    /// let mut html = Vec::new(); // or std::fs::File::create("mutex.html")?
    /// syncprof::profile::mutex().write_html(&mut html)?;
    /// assert!(String::from_utf8(html)?.contains("syncprof-data"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn write_html(&self, w: impl Write) -> io::Result<()>;
}

impl WriteHtml for Profile {
    fn write_html(&self, w: impl Write) -> io::Result<()> {
        let stacks = super::Stacks::from_profile(self);
        let title = self.kind().name();
        match self.kind() {
            ProfileKind::Waiting => write_html(w, title, &[], Some(&stacks)),
            ProfileKind::Block | ProfileKind::Mutex => {
                let view =
                    View::new(title, &stacks, &ViewOptions::default()).map_err(io::Error::other)?;
                write_html(w, title, &[view], None)
            }
        }
    }
}
