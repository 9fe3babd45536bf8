//! A small JSON writer for the view model (the library has no serde).

use std::fmt::Write;

/// Appends JSON to a string. Callers write commas themselves through
/// [`Json::sep`]; strings are escaped so that the output is also safe
/// inside an HTML `<script>` element (`<`, `>` and `&` escaped as `\u00XX`).
pub(crate) struct Json {
    pub(crate) out: String,
}

impl Json {
    pub(crate) fn new() -> Json {
        Json { out: String::new() }
    }

    pub(crate) fn raw(&mut self, s: &str) -> &mut Json {
        self.out.push_str(s);
        self
    }

    /// A comma, unless `first`.
    pub(crate) fn sep(&mut self, first: bool) -> &mut Json {
        if !first {
            self.out.push(',');
        }
        self
    }

    /// `"key":`.
    pub(crate) fn key(&mut self, key: &str) -> &mut Json {
        self.string(key);
        self.out.push(':');
        self
    }

    pub(crate) fn string(&mut self, s: &str) -> &mut Json {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                    let _ = write!(self.out, "\\u{:04x}", c as u32);
                }
                c if (c as u32) < 0x20 => {
                    let _ = write!(self.out, "\\u{:04x}", c as u32);
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
        self
    }

    pub(crate) fn int(&mut self, v: i64) -> &mut Json {
        let _ = write!(self.out, "{v}");
        self
    }

    pub(crate) fn bool(&mut self, v: bool) -> &mut Json {
        self.out.push_str(if v { "true" } else { "false" });
        self
    }

    /// `[a,b,…]` of integers.
    pub(crate) fn ints<I: IntoIterator<Item = i64>>(&mut self, values: I) -> &mut Json {
        self.out.push('[');
        for (i, v) in values.into_iter().enumerate() {
            self.sep(i == 0).int(v);
        }
        self.out.push(']');
        self
    }
}

#[cfg(test)]
mod tests {
    use super::Json;

    #[test]
    fn strings_are_escaped_for_json_and_html() {
        let mut j = Json::new();
        j.string("a\"b\\c\n</script><!--&\u{1}");
        assert_eq!(
            j.out,
            r#""a\"b\\c\n\u003c/script\u003e\u003c!--\u0026\u0001""#
        );
    }
}
