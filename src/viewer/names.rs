//! Function names shortened as `go tool pprof` shortens them for display
//! (`ShortenFunctionName` in google/pprof `internal/graph/graph.go`): a Go
//! package path is cut to its last element, a Java method to `Class.method`,
//! a C++ (and Rust) path to `Type::method`; anything else is kept whole.
//! pprof does this with regular expressions; these are the same patterns
//! written out by hand, so the library needs no regex engine.

/// The name `go tool pprof` shows for `name` in its flame graph and tables.
pub(crate) fn shorten(name: &str) -> String {
    let name = name.strip_prefix("(anonymous namespace)::").unwrap_or(name);
    let name = strip_go_module_version(name);
    if let Some(short) = go_short(&name) {
        return short.to_owned();
    }
    if let Some(short) = java_short(&name) {
        return short.to_owned();
    }
    if let Some(short) = cpp_short(&name) {
        return short.to_owned();
    }
    name.into_owned()
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `^(.*?)/v(?:[2-9]|[1-9][0-9]+)([./].*)$` replaced by `$1$2`: the first
/// `/vN` (N >= 2) followed by `.` or `/` is removed.
fn strip_go_module_version(name: &str) -> std::borrow::Cow<'_, str> {
    let bytes = name.as_bytes();
    let mut i = 0;
    while let Some(found) = name[i..].find("/v") {
        let start = i + found;
        let digits = bytes[start + 2..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = start + 2 + digits;
        let number = &name[start + 2..end];
        let is_major = match digits {
            1 => number.as_bytes()[0] >= b'2',
            0 => false,
            _ => number.as_bytes()[0] != b'0',
        };
        if is_major && matches!(bytes.get(end), Some(b'.' | b'/')) {
            return format!("{}{}", &name[..start], &name[end..]).into();
        }
        i = start + 2;
    }
    name.into()
}

/// `^(?:[\w\-\.]+\/)+([^.]+\..+)`: after one or more path elements, a
/// remainder with a `.` that is neither its first nor its last character.
/// The regex takes as many path elements as it can, then backtracks.
fn go_short(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    // The path elements may hold only word characters, `-` and `.`: the
    // prefix ends before the first other character.
    let allowed = bytes
        .iter()
        .take_while(|&&b| is_word(b) || b == b'-' || b == b'.' || b == b'/')
        .count();
    let slashes: Vec<usize> = bytes[..allowed]
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'/')
        .map(|(i, _)| i)
        .collect();
    for (k, &slash) in slashes.iter().enumerate().rev() {
        // Each path element is non-empty (`[\w\-\.]+`).
        let empty_element = slashes[0] == 0 || slashes[..=k].windows(2).any(|w| w[1] == w[0] + 1);
        if empty_element {
            continue;
        }
        let rest = &name[slash + 1..];
        if let Some(dot) = rest.find('.')
            && dot > 0
            && dot + 1 < rest.len()
        {
            return Some(rest);
        }
    }
    None
}

/// `^(?:[a-z]\w*\.)*([A-Z][\w\$]*\.(?:<init>|[a-z][\w\$]*(?:\$\d+)?))(?:(?:\()|$)`.
fn java_short(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    let java_word = |b: u8| is_word(b) || b == b'$';
    // Candidate starts: 0 and after each `.` of a run of lower-case packages.
    let mut start = 0;
    loop {
        if let Some(end) = java_class_method(bytes, start, &java_word) {
            return Some(&name[start..end]);
        }
        // Consume one `[a-z]\w*\.` package element.
        let first = *bytes.get(start)?;
        if !first.is_ascii_lowercase() {
            return None;
        }
        let len = bytes[start..].iter().take_while(|&&b| is_word(b)).count();
        if bytes.get(start + len) != Some(&b'.') {
            return None;
        }
        start += len + 1;
    }
}

/// The end of `[A-Z][\w\$]*\.(?:<init>|[a-z][\w\$]*(?:\$\d+)?)` at `start`,
/// when followed by `(` or the end.
fn java_class_method(bytes: &[u8], start: usize, java_word: &dyn Fn(u8) -> bool) -> Option<usize> {
    if !bytes.get(start)?.is_ascii_uppercase() {
        return None;
    }
    let mut i = start + 1;
    while bytes.get(i).is_some_and(|&b| java_word(b)) {
        i += 1;
    }
    // `[\w\$]*` is greedy but may give back characters up to a `.`; it holds
    // no `.`, so the `.` must come right after it.
    if bytes.get(i) != Some(&b'.') {
        return None;
    }
    i += 1;
    let end = if bytes[i..].starts_with(b"<init>") {
        i + 6
    } else {
        if !bytes.get(i)?.is_ascii_lowercase() {
            return None;
        }
        let mut j = i + 1;
        while bytes.get(j).is_some_and(|&b| java_word(b)) {
            j += 1;
        }
        j
    };
    matches!(bytes.get(end), None | Some(b'(')).then_some(end)
}

/// `^(?:[_a-zA-Z]\w*::)+(_*[A-Z]\w*::~?[_a-zA-Z]\w*(?:<.*>)?)`: the last
/// `Type::method` of a path whose elements are plain identifiers.
fn cpp_short(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    // The starts of the path's elements: `[_a-zA-Z]\w*::` repeated.
    let mut starts = Vec::new();
    let mut i = 0;
    loop {
        let first = *bytes.get(i)?;
        if !(first.is_ascii_alphabetic() || first == b'_') {
            break;
        }
        let len = bytes[i..].iter().take_while(|&&b| is_word(b)).count();
        if !bytes[i + len..].starts_with(b"::") {
            break;
        }
        starts.push(i + len + 2);
        i += len + 2;
    }
    // Greedy: try the capture after as many elements as possible first.
    for &start in starts.iter().rev() {
        if let Some(end) = cpp_type_method(bytes, start) {
            return Some(&name[start..end]);
        }
    }
    None
}

/// The end of `_*[A-Z]\w*::~?[_a-zA-Z]\w*(?:<.*>)?` at `start`.
fn cpp_type_method(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    while bytes.get(i) == Some(&b'_') {
        i += 1;
    }
    if !bytes.get(i)?.is_ascii_uppercase() {
        return None;
    }
    i += 1;
    while bytes.get(i).is_some_and(|&b| is_word(b)) {
        i += 1;
    }
    if !bytes[i..].starts_with(b"::") {
        return None;
    }
    i += 2;
    if bytes.get(i) == Some(&b'~') {
        i += 1;
    }
    let first = *bytes.get(i)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    i += 1;
    while bytes.get(i).is_some_and(|&b| is_word(b)) {
        i += 1;
    }
    // `(?:<.*>)?`: up to the last `>` when a `<` follows.
    if bytes.get(i) == Some(&b'<')
        && let Some(last) = bytes.iter().rposition(|&b| b == b'>')
        && last > i
    {
        return Some(last + 1);
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::shorten;

    #[test]
    fn shortens_as_pprof_does() {
        // Cases from pprof's graph_test.go (TestShortenFunctionName).
        for (full, short) in [
            ("", ""),
            ("functionName", "functionName"),
            ("path/to/package.functionName", "package.functionName"),
            ("path/to/package.(*Type).method", "package.(*Type).method"),
            (
                "path/to/package.(*Type).method.func1",
                "package.(*Type).method.func1",
            ),
            ("java.util.HashMap.get", "HashMap.get"),
            ("java.util.HashMap.<init>", "HashMap.<init>"),
            ("java.util.HashMap.get(Ljava/lang/Object;)", "HashMap.get"),
            ("com.google.Foo$Bar.method$1", "Foo$Bar.method$1"),
            ("ns::Type::method", "Type::method"),
            ("foo::bar::Baz::qux", "Baz::qux"),
            ("(anonymous namespace)::Foo::bar", "Foo::bar"),
            ("std::vector<int>::push_back", "std::vector<int>::push_back"),
            ("github.com/blah/blah/v2/blah.Foo", "blah.Foo"),
            ("sync.(*Mutex).Unlock", "sync.(*Mutex).Unlock"),
            ("main.worker", "main.worker"),
            ("myapp::cache::Cache::get", "Cache::get"),
            ("myapp::worker", "myapp::worker"),
            (
                "<syncprof::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop",
                "<syncprof::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop",
            ),
        ] {
            assert_eq!(shorten(full), short, "{full}");
        }
    }
}
