//! Editable text: a file decoded so that it can be written back exactly as it was read.
//!
//! Recognised, in this order: a byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE); otherwise a
//! NUL byte means binary (refused); otherwise UTF-8; otherwise strict GBK, accepted only when
//! encoding the decoded text again gives the identical bytes. Anything else is refused, never
//! guessed. Line endings: a file whose every line break is CRLF is edited as LF and written back
//! as CRLF; any other file (LF, or a mix) is edited as it is.
//!
//! ```
//! use cheng_nodes_files::text::Editable;
//!
//! let bytes = b"\xEF\xBB\xBFone\r\ntwo\r\n".to_vec();
//! let mut file = Editable::decode(&bytes).unwrap();
//! assert_eq!(file.text, "one\ntwo\n");
//! file.text = file.text.replace("two", "2");
//! assert_eq!(file.encode(&file.text).unwrap(), b"\xEF\xBB\xBFone\r\n2\r\n");
//! ```

use std::fmt;

/// How the file's bytes map to text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
    Utf32Le,
    Utf32Be,
    /// Strict GBK: the file decodes without errors and re-encodes to the same bytes.
    Gbk,
}

impl Encoding {
    pub fn name(&self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with BOM",
            Encoding::Utf16Le => "UTF-16 LE",
            Encoding::Utf16Be => "UTF-16 BE",
            Encoding::Utf32Le => "UTF-32 LE",
            Encoding::Utf32Be => "UTF-32 BE",
            Encoding::Gbk => "GBK",
        }
    }

    fn bom(&self) -> &'static [u8] {
        match self {
            Encoding::Utf8 | Encoding::Gbk => b"",
            Encoding::Utf8Bom => b"\xEF\xBB\xBF",
            Encoding::Utf16Le => b"\xFF\xFE",
            Encoding::Utf16Be => b"\xFE\xFF",
            Encoding::Utf32Le => b"\xFF\xFE\x00\x00",
            Encoding::Utf32Be => b"\x00\x00\xFE\xFF",
        }
    }
}

/// The file's line breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    /// LF only (or no line break at all): the text is the file's.
    Lf,
    /// Every line break is CRLF: edited as LF, written back as CRLF.
    CrLf,
    /// Both kinds: the text is the file's, `\r` included.
    Mixed,
}

impl LineEnding {
    pub fn name(&self) -> &'static str {
        match self {
            LineEnding::Lf => "LF",
            LineEnding::CrLf => "CRLF",
            LineEnding::Mixed => "mixed",
        }
    }
}

/// Why a file cannot be edited as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextError {
    /// A NUL byte without a UTF-16/32 byte-order mark.
    Binary,
    /// Not UTF-8, not a BOM-marked UTF-16/32, not strict GBK (or not one that round-trips).
    Undecodable(String),
    /// The new text cannot be written in the file's encoding (a character GBK lacks).
    Unencodable(String),
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::Binary => f.write_str("is a binary file (it contains NUL bytes and no UTF-16/32 byte-order mark); only text files can be edited"),
            TextError::Undecodable(why) => write!(f, "cannot be edited as text: {why}; only UTF-8 (with or without BOM), UTF-16/32 with a BOM and GBK files are edited, and cheng never guesses another encoding"),
            TextError::Unencodable(why) => write!(f, "cannot be written back in its encoding: {why}"),
        }
    }
}

/// A decoded file: the text to edit plus what is needed to write it back the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editable {
    /// The text, with CRLF shown as LF when [`LineEnding::CrLf`].
    pub text: String,
    pub encoding: Encoding,
    pub line_ending: LineEnding,
}

impl Editable {
    /// A new file's format: UTF-8 without BOM, the text as given.
    pub fn new_file(text: String) -> Self {
        Editable {
            text,
            encoding: Encoding::Utf8,
            line_ending: LineEnding::Lf,
        }
    }

    /// Decodes `bytes`; refuses binary and undecodable files.
    pub fn decode(bytes: &[u8]) -> Result<Editable, TextError> {
        let (encoding, raw) = decode_raw(bytes)?;
        let line_ending = line_ending(&raw);
        let text = if line_ending == LineEnding::CrLf {
            raw.replace("\r\n", "\n")
        } else {
            raw
        };
        let file = Editable {
            text,
            encoding,
            line_ending,
        };
        // Belt and braces for the encodings whose decoder could normalise something.
        if matches!(
            encoding,
            Encoding::Gbk
                | Encoding::Utf16Le
                | Encoding::Utf16Be
                | Encoding::Utf32Le
                | Encoding::Utf32Be
        ) {
            match file.encode(&file.text) {
                Ok(again) if again == bytes => {}
                _ => {
                    return Err(TextError::Undecodable(format!(
                        "its {} does not re-encode to the same bytes",
                        encoding.name()
                    )))
                }
            }
        }
        Ok(file)
    }

    /// `text` in this file's format: line breaks converted back, BOM and encoding applied.
    /// For a [`LineEnding::CrLf`] file every LF in `text` becomes CRLF (CRLF given in `text`
    /// is taken as one line break).
    pub fn encode(&self, text: &str) -> Result<Vec<u8>, TextError> {
        let text = self.normalise_input(text);
        let text = if self.line_ending == LineEnding::CrLf {
            std::borrow::Cow::Owned(text.replace('\n', "\r\n"))
        } else {
            text
        };
        let mut out = Vec::with_capacity(text.len() + 4);
        out.extend_from_slice(self.encoding.bom());
        match self.encoding {
            Encoding::Utf8 | Encoding::Utf8Bom => out.extend_from_slice(text.as_bytes()),
            Encoding::Utf16Le => text
                .encode_utf16()
                .for_each(|u| out.extend_from_slice(&u.to_le_bytes())),
            Encoding::Utf16Be => text
                .encode_utf16()
                .for_each(|u| out.extend_from_slice(&u.to_be_bytes())),
            Encoding::Utf32Le => text
                .chars()
                .for_each(|c| out.extend_from_slice(&u32::from(c).to_le_bytes())),
            Encoding::Utf32Be => text
                .chars()
                .for_each(|c| out.extend_from_slice(&u32::from(c).to_be_bytes())),
            Encoding::Gbk => {
                let (bytes, _, unmappable) = encoding_rs::GBK.encode(&text);
                if unmappable {
                    let missing: String = text
                        .chars()
                        .filter(|c| {
                            let mut buf = [0u8; 4];
                            encoding_rs::GBK.encode(c.encode_utf8(&mut buf)).2
                        })
                        .take(5)
                        .collect();
                    return Err(TextError::Unencodable(format!("GBK has no code for {missing:?}; write the text with characters GBK has, or convert the file to UTF-8 first")));
                }
                out.extend_from_slice(&bytes);
            }
        }
        Ok(out)
    }

    /// Text given by the model in this file's convention: CRLF read as LF for a CRLF file.
    pub fn normalise_input<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.line_ending == LineEnding::CrLf && text.contains("\r\n") {
            std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
        } else {
            std::borrow::Cow::Borrowed(text)
        }
    }

    /// "UTF-8, LF" for messages and outputs.
    pub fn describe(&self) -> String {
        format!("{}, {}", self.encoding.name(), self.line_ending.name())
    }
}

/// Whether `bytes` look binary: a NUL byte in the first 8 KiB without a UTF-16/32 BOM.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bom_encoding(bytes).is_none() && bytes[..bytes.len().min(8192)].contains(&0)
}

fn bom_encoding(bytes: &[u8]) -> Option<Encoding> {
    // UTF-32 LE's mark starts with UTF-16 LE's: test it first.
    [
        Encoding::Utf32Le,
        Encoding::Utf32Be,
        Encoding::Utf8Bom,
        Encoding::Utf16Le,
        Encoding::Utf16Be,
    ]
    .into_iter()
    .find(|e| bytes.starts_with(e.bom()))
}

fn decode_raw(bytes: &[u8]) -> Result<(Encoding, String), TextError> {
    if let Some(encoding) = bom_encoding(bytes) {
        let body = &bytes[encoding.bom().len()..];
        let text = match encoding {
            Encoding::Utf8Bom => std::str::from_utf8(body).map(str::to_string).map_err(|e| {
                TextError::Undecodable(format!(
                    "it starts with a UTF-8 byte-order mark but byte {} is not UTF-8",
                    e.valid_up_to() + 3
                ))
            })?,
            Encoding::Utf16Le | Encoding::Utf16Be => {
                decode_utf16(body, encoding == Encoding::Utf16Le)?
            }
            _ => decode_utf32(body, encoding == Encoding::Utf32Le)?,
        };
        return Ok((encoding, text));
    }
    if memchr::memchr(0, bytes).is_some() {
        return Err(TextError::Binary);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok((Encoding::Utf8, text.to_string())),
        Err(utf8) => {
            let (text, had_errors) = encoding_rs::GBK.decode_without_bom_handling(bytes);
            if !had_errors {
                let (again, _, unmappable) = encoding_rs::GBK.encode(&text);
                if !unmappable && again.as_ref() == bytes {
                    return Ok((Encoding::Gbk, text.into_owned()));
                }
            }
            Err(TextError::Undecodable(format!(
                "byte {} is not UTF-8 and the file is not strict GBK either",
                utf8.valid_up_to()
            )))
        }
    }
}

fn decode_utf16(body: &[u8], le: bool) -> Result<String, TextError> {
    if !body.len().is_multiple_of(2) {
        return Err(TextError::Undecodable(
            "its UTF-16 has an odd number of bytes".into(),
        ));
    }
    let units = body.chunks_exact(2).map(|c| {
        if le {
            u16::from_le_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], c[1]])
        }
    });
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map_err(|e| {
            TextError::Undecodable(format!(
                "its UTF-16 has an unpaired surrogate 0x{:04X}",
                e.unpaired_surrogate()
            ))
        })
}

fn decode_utf32(body: &[u8], le: bool) -> Result<String, TextError> {
    if !body.len().is_multiple_of(4) {
        return Err(TextError::Undecodable(
            "its UTF-32 length is not a multiple of 4 bytes".into(),
        ));
    }
    body.chunks_exact(4)
        .map(|c| {
            let n = if le {
                u32::from_le_bytes([c[0], c[1], c[2], c[3]])
            } else {
                u32::from_be_bytes([c[0], c[1], c[2], c[3]])
            };
            char::from_u32(n).ok_or_else(|| {
                TextError::Undecodable(format!("0x{n:08X} is not a Unicode scalar value"))
            })
        })
        .collect()
}

fn line_ending(text: &str) -> LineEnding {
    let bytes = text.as_bytes();
    let (mut lf, mut crlf) = (0usize, 0usize);
    for i in memchr::memchr_iter(b'\n', bytes) {
        lf += 1;
        crlf += usize::from(i > 0 && bytes[i - 1] == b'\r');
    }
    if lf == 0 {
        return LineEnding::Lf;
    }
    if crlf == lf {
        LineEnding::CrLf
    } else if crlf == 0 {
        LineEnding::Lf
    } else {
        LineEnding::Mixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(bytes: &[u8]) -> Editable {
        let file = Editable::decode(bytes).unwrap();
        assert_eq!(file.encode(&file.text).unwrap(), bytes, "{file:?}");
        file
    }

    #[test]
    fn every_supported_format_round_trips_byte_identical() {
        assert_eq!(round_trip(b"a\nb\n").encoding, Encoding::Utf8);
        assert_eq!(round_trip(b"a\r\nb\r\n").line_ending, LineEnding::CrLf);
        assert_eq!(round_trip(b"a\r\nb\nc\r").line_ending, LineEnding::Mixed);
        assert_eq!(round_trip(b"\xEF\xBB\xBFa\r\n").encoding, Encoding::Utf8Bom);
        let utf16le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(
                "h\u{e9}\u{1F600}\r\n"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes),
            )
            .collect();
        let file = round_trip(&utf16le);
        assert_eq!(
            (file.encoding, file.text.as_str()),
            (Encoding::Utf16Le, "h\u{e9}\u{1F600}\n")
        );
        let utf16be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("x\ny".encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(round_trip(&utf16be).encoding, Encoding::Utf16Be);
        let utf32le: Vec<u8> = [0xFF, 0xFE, 0, 0]
            .into_iter()
            .chain("z\n".chars().flat_map(|c| u32::from(c).to_le_bytes()))
            .collect();
        assert_eq!(round_trip(&utf32le).encoding, Encoding::Utf32Le);
        let gbk = encoding_rs::GBK.encode("中文\r\n").0.into_owned();
        let file = round_trip(&gbk);
        assert_eq!(
            (file.encoding, file.text.as_str()),
            (Encoding::Gbk, "中文\n")
        );
    }

    #[test]
    fn binary_and_undecodable_are_refused_not_guessed() {
        assert_eq!(Editable::decode(b"a\0b").unwrap_err(), TextError::Binary);
        // 0xFF is neither UTF-8 nor a GBK lead byte.
        assert!(matches!(
            Editable::decode(b"abc\xFF").unwrap_err(),
            TextError::Undecodable(_)
        ));
        // Unpaired surrogate in UTF-16.
        assert!(matches!(
            Editable::decode(&[0xFF, 0xFE, 0x00, 0xD8]).unwrap_err(),
            TextError::Undecodable(_)
        ));
    }

    #[test]
    fn edits_keep_the_format_and_gbk_refuses_what_it_cannot_write() {
        let file = Editable::decode(b"one\r\ntwo\r\n").unwrap();
        assert_eq!(file.encode("one\nthree\r\n").unwrap(), b"one\r\nthree\r\n");
        let gbk = Editable::decode(&encoding_rs::GBK.encode("中文").0).unwrap();
        assert!(matches!(
            gbk.encode("emoji \u{1F600}").unwrap_err(),
            TextError::Unencodable(_)
        ));
    }
}
