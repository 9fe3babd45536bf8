//! Reading pprof (`perftools.profiles.Profile`, gzipped or not) into
//! [`Stacks`]: every id and string index checked, every size capped, every
//! sum saturating, so that a corrupt, truncated or hostile file is an error
//! (or a clipped value), never a panic or an unbounded allocation.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;

use prost::Message;

use super::names;
use crate::profile::pprof::pb;

/// The largest pprof message read, compressed or not: 256 MiB. A gzip
/// stream that inflates past it is refused (a gzip bomb costs at most this
/// much memory).
pub const MAX_PPROF_BYTES: usize = 256 << 20;

/// Frames kept per sample (inlined frames counted): deeper stacks keep
/// their outermost frames and end in a frame named `syncprof::truncated`.
pub const MAX_FRAMES: usize = 1024;

/// The most value columns (`sample_type`s) a profile may have.
pub const MAX_SAMPLE_TYPES: usize = 16;

/// Why a profile could not be read.
///
/// # Examples
///
/// ```
/// let error = syncprof::viewer::Stacks::from_pprof(b"not a profile").unwrap_err();
/// assert!(error.to_string().contains("pprof"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    message: String,
}

impl ReadError {
    pub(crate) fn new(message: impl Into<String>) -> ReadError {
        ReadError {
            message: message.into(),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReadError {}

/// A function as the viewer shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Function {
    /// The full name (pprof's `name`, else `system_name`, else the address).
    pub(crate) name: String,
    /// The name as `go tool pprof` shortens it.
    pub(crate) short: String,
    /// The source file, or empty.
    pub(crate) file: String,
}

/// One sample: its frames root first (function indices), one value per
/// sample type, and its label set.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) frames: Vec<u32>,
    pub(crate) values: Vec<i64>,
    pub(crate) labelset: u32,
}

/// The samples of one profile with their stacks resolved to function names
/// and their labels gathered into label sets: what the viewer, the HTML
/// export and the command line read, whether the profile came from this
/// process ([`Stacks::from_profile`]) or from a pprof file of any program
/// ([`Stacks::from_pprof`], Go's included).
///
/// # Examples
///
/// ```
/// use syncprof::viewer::Stacks;
///
/// let stacks = Stacks::from_profile(&syncprof::profile::mutex());
/// assert_eq!(stacks.sample_types()[1], ("delay".to_owned(), "nanoseconds".to_owned()));
/// ```
#[derive(Debug, Clone)]
pub struct Stacks {
    pub(crate) sample_types: Vec<(String, String)>,
    pub(crate) default_value: usize,
    pub(crate) functions: Vec<Function>,
    /// Label sets, each sorted by key then value; index 0 is the empty set.
    pub(crate) labelsets: Vec<Vec<(String, String)>>,
    pub(crate) samples: Vec<Sample>,
    pub(crate) time_nanos: i64,
    pub(crate) duration_nanos: i64,
}

impl Stacks {
    /// Reads a pprof profile, gzipped (as Go and syncprof write it) or not.
    ///
    /// # Errors
    ///
    /// A [`ReadError`] saying what is wrong: not gzip nor protobuf, a gzip
    /// stream that is cut short or inflates past [`MAX_PPROF_BYTES`], a
    /// string index, location id or function id that points nowhere, sample
    /// values that do not match the sample types, more than
    /// [`MAX_SAMPLE_TYPES`] sample types. Counts too large for an `i64` sum
    /// saturate rather than fail.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::viewer::Stacks;
    ///
    /// let mut pprof = Vec::new();
    /// syncprof::profile::block().write_pprof(&mut pprof)?;
    /// let stacks = Stacks::from_pprof(&pprof)?;
    /// assert_eq!(stacks.sample_types().len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_pprof(bytes: &[u8]) -> Result<Stacks, ReadError> {
        let raw = inflate(bytes)?;
        let message = pb::Profile::decode(raw.as_ref())
            .map_err(|e| ReadError::new(format!("not a pprof profile (protobuf: {e})")))?;
        Stacks::from_message(&message)
    }

    /// The stacks of a profile of this process (symbolized, std's start-up
    /// frames trimmed), read through the same pprof message that
    /// [`Profile::write_pprof`](crate::profile::Profile::write_pprof)
    /// writes, so the viewer shows exactly what `go tool pprof` would.
    ///
    /// # Examples
    ///
    /// ```
    /// let stacks = syncprof::viewer::Stacks::from_profile(&syncprof::profile::block());
    /// assert!(stacks.len() <= syncprof::profile::block().records().len());
    /// ```
    pub fn from_profile(profile: &crate::profile::Profile) -> Stacks {
        Stacks::from_message(&profile.to_pprof())
            .expect("syncprof's own pprof messages are well formed")
    }

    /// The sample types, as (type, unit): `("contentions", "count")` and
    /// `("delay", "nanoseconds")` for block and mutex profiles.
    pub fn sample_types(&self) -> &[(String, String)] {
        &self.sample_types
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The sum of each sample type's values over every sample (saturating).
    ///
    /// # Examples
    ///
    /// ```
    /// let stacks = syncprof::viewer::Stacks::from_profile(&syncprof::profile::mutex());
    /// let [contentions, delay] = stacks.totals()[..] else { unreachable!() };
    /// assert!(contentions >= 0 && delay >= 0);
    /// ```
    pub fn totals(&self) -> Vec<i64> {
        let mut totals = vec![0i64; self.sample_types.len()];
        for sample in &self.samples {
            for (total, value) in totals.iter_mut().zip(&sample.values) {
                *total = total.saturating_add(*value);
            }
        }
        totals
    }

    /// The index of the sample type shown by default: pprof's
    /// `default_sample_type` when set, else the last (delay, for block and
    /// mutex profiles).
    pub fn default_value(&self) -> usize {
        self.default_value
    }

    /// Which sample type `name` (`"delay"`, `"contentions"`, …) is, or the
    /// index itself when `name` is a number in range.
    pub fn value_index(&self, name: &str) -> Option<usize> {
        self.sample_types
            .iter()
            .position(|(t, _)| t == name)
            .or_else(|| {
                name.parse::<usize>()
                    .ok()
                    .filter(|&i| i < self.sample_types.len())
            })
    }

    fn from_message(p: &pb::Profile) -> Result<Stacks, ReadError> {
        let strings = &p.string_table;
        if strings.first().is_some_and(|s| !s.is_empty()) {
            return Err(ReadError::new(
                "invalid pprof: string_table[0] must be the empty string",
            ));
        }
        let string = |index: i64, what: &str| -> Result<&str, ReadError> {
            usize::try_from(index)
                .ok()
                .and_then(|i| strings.get(i))
                .map(String::as_str)
                .ok_or_else(|| {
                    ReadError::new(format!(
                        "invalid pprof: {what} refers to string {index}, but the string table has {} entries",
                        strings.len()
                    ))
                })
        };
        if p.sample_type.is_empty() && !p.sample.is_empty() {
            return Err(ReadError::new(
                "invalid pprof: samples without sample types",
            ));
        }
        if p.sample_type.len() > MAX_SAMPLE_TYPES {
            return Err(ReadError::new(format!(
                "invalid pprof: {} sample types, at most {MAX_SAMPLE_TYPES} are read",
                p.sample_type.len()
            )));
        }
        let sample_types = p
            .sample_type
            .iter()
            .map(|t| {
                Ok((
                    string(t.r#type, "a sample type")?.to_owned(),
                    string(t.unit, "a sample type's unit")?.to_owned(),
                ))
            })
            .collect::<Result<Vec<_>, ReadError>>()?;
        let default_value = if p.default_sample_type != 0 {
            let name = string(p.default_sample_type, "default_sample_type")?;
            sample_types
                .iter()
                .position(|(t, _)| t == name)
                .unwrap_or(sample_types.len().saturating_sub(1))
        } else {
            sample_types.len().saturating_sub(1)
        };

        // Functions, merged by full name.
        let mut functions: Vec<Function> = Vec::new();
        let mut function_by_name: HashMap<String, u32> = HashMap::new();
        let mut intern = |name: &str, file: &str| -> u32 {
            if let Some(&index) = function_by_name.get(name) {
                return index;
            }
            let index = functions.len() as u32;
            functions.push(Function {
                name: name.to_owned(),
                short: names::shorten(name),
                file: file.to_owned(),
            });
            function_by_name.insert(name.to_owned(), index);
            index
        };
        let mut function_ids: HashMap<u64, u32> = HashMap::with_capacity(p.function.len());
        for f in &p.function {
            let mut name = string(f.name, "a function's name")?;
            if name.is_empty() {
                name = string(f.system_name, "a function's system name")?;
            }
            let file = string(f.filename, "a function's file")?;
            let name = if name.is_empty() { "?" } else { name };
            if function_ids.insert(f.id, intern(name, file)).is_some() {
                return Err(ReadError::new(format!(
                    "invalid pprof: function id {} appears twice",
                    f.id
                )));
            }
        }
        // Locations: their frames outermost first.
        let mut location_frames: HashMap<u64, Vec<u32>> = HashMap::with_capacity(p.location.len());
        for l in &p.location {
            let frames = if l.line.is_empty() {
                vec![intern(&format!("0x{:x}", l.address), "")]
            } else {
                l.line
                    .iter()
                    .rev()
                    .map(|line| {
                        function_ids.get(&line.function_id).copied().ok_or_else(|| {
                            ReadError::new(format!(
                                "invalid pprof: location {} refers to function id {}, which is not in the profile",
                                l.id, line.function_id
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?
            };
            if location_frames.insert(l.id, frames).is_some() {
                return Err(ReadError::new(format!(
                    "invalid pprof: location id {} appears twice",
                    l.id
                )));
            }
        }
        let truncated = intern(crate::profile::pprof::TRUNCATED_FRAME, "");

        let mut labelsets: Vec<Vec<(String, String)>> = vec![Vec::new()];
        let mut labelset_ids: HashMap<Vec<(String, String)>, u32> = HashMap::new();
        labelset_ids.insert(Vec::new(), 0);
        let mut samples = Vec::with_capacity(p.sample.len());
        for (n, s) in p.sample.iter().enumerate() {
            if s.value.len() != sample_types.len() {
                return Err(ReadError::new(format!(
                    "invalid pprof: sample {n} has {} values for {} sample types",
                    s.value.len(),
                    sample_types.len()
                )));
            }
            let mut frames = Vec::new();
            let mut cut = false;
            // location_id is leaf first: walk it from the root.
            for id in s.location_id.iter().rev() {
                let location = location_frames.get(id).ok_or_else(|| {
                    ReadError::new(format!(
                        "invalid pprof: sample {n} refers to location id {id}, which is not in the profile"
                    ))
                })?;
                if frames.len() + location.len() > MAX_FRAMES {
                    cut = true;
                    break;
                }
                frames.extend_from_slice(location);
            }
            if cut {
                frames.truncate(MAX_FRAMES - 1);
                frames.push(truncated);
            }
            let mut labels = s
                .label
                .iter()
                .map(|l| {
                    let key = string(l.key, "a label's key")?.to_owned();
                    let value = if l.str != 0 {
                        string(l.str, "a label's value")?.to_owned()
                    } else {
                        let unit = string(l.num_unit, "a label's unit")?;
                        format!("{}{unit}", l.num)
                    };
                    Ok((key, value))
                })
                .collect::<Result<Vec<_>, ReadError>>()?;
            labels.sort();
            let labelset = match labelset_ids.get(&labels) {
                Some(&id) => id,
                None => {
                    let id = labelsets.len() as u32;
                    labelset_ids.insert(labels.clone(), id);
                    labelsets.push(labels);
                    id
                }
            };
            samples.push(Sample {
                frames,
                values: s.value.clone(),
                labelset,
            });
        }
        Ok(Stacks {
            sample_types,
            default_value,
            functions,
            labelsets,
            samples,
            time_nanos: p.time_nanos,
            duration_nanos: p.duration_nanos,
        })
    }
}

/// The protobuf bytes: `bytes` itself, or inflated when gzipped, at most
/// [`MAX_PPROF_BYTES`] either way.
fn inflate(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, ReadError> {
    if bytes.len() > MAX_PPROF_BYTES {
        return Err(ReadError::new(format!(
            "profile of {} bytes exceeds the cap of {} MiB",
            bytes.len(),
            MAX_PPROF_BYTES >> 20
        )));
    }
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes.into());
    }
    let mut raw = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(MAX_PPROF_BYTES as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| ReadError::new(format!("corrupt gzip in pprof file: {e}")))?;
    if raw.len() > MAX_PPROF_BYTES {
        return Err(ReadError::new(format!(
            "gzipped profile inflates past the cap of {} MiB",
            MAX_PPROF_BYTES >> 20
        )));
    }
    Ok(raw.into())
}
