//! See the profiles without Go: a contention viewer for the block and mutex
//! profiles, as a page served by the endpoint (`GET /debug/pprof/ui`,
//! feature `http`), as one self-contained HTML file
//! ([`WriteHtml::write_html`] on a [`Profile`](crate::profile::Profile),
//! [`write_html`]) and as the `syncprof` command line (feature `cli`).
//!
//! The three share one reader and one model, so they cannot disagree:
//! - [`Stacks`] reads a profile, of this process
//!   ([`Stacks::from_profile`], through the same pprof message the pprof
//!   routes serve) or from any pprof file ([`Stacks::from_pprof`], Go's
//!   included, gzipped or not, checked and capped);
//! - [`View`] merges its samples into a stack tree and top rows by function,
//!   with every value kept per label set, and takes the [`View::diff`] of
//!   two; a label [`Filter`] (`-tagfocus`/`-tagignore`) is a choice of label
//!   sets, which the page and [`View::top`] sum alike;
//! - the page's script (`viewer.js`) only draws that model: the top table
//!   as DOM rows, the flame graph on a 2D canvas.
//!
//! The page loads nothing from anywhere but the endpoint (served with
//! `Content-Security-Policy: default-src 'self'`); the HTML file loads
//! nothing at all (its policy is `default-src 'none'` with its own inline
//! script and style allowed). See `docs/viewer.md`.
//!
//! # Examples
//!
//! ```
//! use syncprof::viewer::{By, Filter, Stacks, View, ViewOptions};
//!
//! let stacks = Stacks::from_profile(&syncprof::profile::mutex());
//! let view = View::new("mutex", &stacks, &ViewOptions::default())?;
//! let mut rows = view.top(&By::Label("lock".into()), &Filter::parse("", "kind=condvar")?);
//! rows.sort_by_key(|row| std::cmp::Reverse(row.flat[1]));
//! for row in rows.iter().take(5) {
//!     println!("{:>12} ns  {}", row.flat[1], row.name);
//! }
//! let mut html = Vec::new();
//! syncprof::viewer::write_html(&mut html, "contention", &[view], None)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod json;
mod model;
mod names;
pub(crate) mod page;
mod read;

pub use model::{By, Filter, MAX_FILTER_TERMS, MAX_TREE_NODES, TopRow, View, ViewOptions};
#[cfg(feature = "http")]
pub(crate) use page::{Page, waiting_json};
pub use page::{WriteHtml, write_html};
pub use read::{MAX_FRAMES, MAX_PPROF_BYTES, MAX_SAMPLE_TYPES, ReadError, Stacks};
