//! What text people type may hold when others are shown it: display names, tournament
//! names and chat lines go through [`check`], so that one rule says what "invisible",
//! "forbidden" and "stacked" mean everywhere (a walk found names, tournament names and
//! chat each with a rule of their own, and each with its own hole).
//!
//! The dangers are text that looks like other text (an invisible character in front of
//! "Bot 3", a name that is a lone joiner), text that draws over its neighbours (hundreds of
//! combining marks on one letter) and text that changes the direction of what follows it.

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Combining marks one character may carry: enough for any language's accents and
/// vowel signs (Vietnamese stacks two, pointed Hebrew three), not for text that spills over
/// the lines around it.
pub const MAX_MARKS_IN_A_ROW: usize = 4;

/// Why a text is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextError {
    /// Nothing visible: empty, or only spaces, marks and invisible characters.
    Invisible,
    /// More than the field's characters (Unicode scalar values, after trimming).
    TooLong { max: usize, count: usize },
    /// A character that may not appear there, and its place (1-based, in characters).
    Forbidden { c: char, at: usize },
    /// More than [`MAX_MARKS_IN_A_ROW`] combining marks on one character.
    Stacked,
}

impl TextError {
    /// The reason in words, for `what` ("a name", "a chat line").
    pub fn describe(&self, what: &str) -> String {
        match self {
            TextError::Invisible => format!("{what} needs at least one visible character"),
            TextError::TooLong { max, count } => {
                format!("{what} has 1 to {max} characters; this one has {count}")
            }
            TextError::Forbidden { c, at } => format!(
                "{what} cannot contain control, invisible, unassigned or private-use \
                 characters (bidi overrides, zero-width characters, line breaks): U+{:04X} \
                 at character {at}",
                u32::from(*c)
            ),
            TextError::Stacked => format!(
                "{what} may stack at most {MAX_MARKS_IN_A_ROW} combining marks on one character"
            ),
        }
    }
}

/// What a field allows beyond the common rule.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The most characters after trimming.
    pub max_chars: usize,
    /// Emoji sequences' joiners: the zero-width joiner between two visible characters
    /// (👩‍💻) and the tag characters of a flag's tag sequence (🏴󠁧󠁢󠁳󠁣󠁴󠁿). Chat allows them;
    /// names do not (a joiner makes two names that look alike compare different).
    pub emoji_joiners: bool,
}

/// Checks `raw` for `field` and returns it trimmed.
pub fn check(raw: &str, field: Field) -> Result<&str, TextError> {
    let text = raw.trim();
    let chars: Vec<char> = text.chars().collect();
    if !chars.iter().any(|&c| visible(c)) {
        return Err(TextError::Invisible);
    }
    if chars.len() > field.max_chars {
        return Err(TextError::TooLong {
            max: field.max_chars,
            count: chars.len(),
        });
    }
    let mut marks = 0;
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        let allowed = if is_variation_selector(c) {
            // U+FE0F makes ❤ an emoji: after a character that is drawn, once.
            before.is_some_and(visible)
        } else if c == '\u{200D}' {
            field.emoji_joiners
                && before.is_some_and(|b| visible(b) || is_variation_selector(b))
                && after.is_some_and(visible)
        } else if is_tag(c) {
            // A flag's tag sequence: U+1F3F4, tags, and U+E007F to end it.
            field.emoji_joiners && in_tag_sequence(&chars, i)
        } else {
            !forbidden(c)
        };
        if !allowed {
            return Err(TextError::Forbidden { c, at: i + 1 });
        }
        marks = if stacks(c) { marks + 1 } else { 0 };
        if marks > MAX_MARKS_IN_A_ROW {
            return Err(TextError::Stacked);
        }
    }
    Ok(text)
}

/// Whether `c` is drawn by itself: not a space, not a mark (marks are drawn on another
/// character), not one of the characters drawn as nothing, and not forbidden.
fn visible(c: char) -> bool {
    !c.is_whitespace()
        && !matches!(
            c.general_category(),
            GeneralCategory::NonspacingMark
                | GeneralCategory::SpacingMark
                | GeneralCategory::EnclosingMark
        )
        && !forbidden(c)
        && !is_variation_selector(c)
}

/// Characters no text may hold anywhere: controls (Cc) and format characters (Cf: bidi
/// overrides and isolates, zero-width spaces, the BOM, the soft hyphen), line and
/// paragraph separators, unassigned code points and noncharacters (Cn: U+FFF0 is drawn as
/// nothing, and a font may draw a later-assigned one as anything), private-use characters
/// (Co: whatever a font makes of them), and the letters and marks drawn as nothing at all
/// (Unicode's default-ignorable ones that are not format characters: the Hangul fillers,
/// the combining grapheme joiner, Khmer's inherent vowels, Mongolian's free variation
/// selectors; and the blank Braille pattern). Variation selectors, the zero-width joiner
/// and tags have rules of their own in [`check`].
fn forbidden(c: char) -> bool {
    matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::Unassigned
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
    ) || matches!(
        c,
        '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'
            ..='\u{180F}' | '\u{2800}' | '\u{3164}' | '\u{FFA0}'
    )
}

/// The variation selectors (U+FE00–FE0F and U+E0100–E01EF): they choose a glyph of the
/// character before them.
fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}

/// The tag characters (U+E0020–E007F).
fn is_tag(c: char) -> bool {
    matches!(c, '\u{E0020}'..='\u{E007F}')
}

/// Whether the tag at `i` belongs to a flag's tag sequence: a black flag (U+1F3F4), then
/// tag letters and digits, then the cancel tag (U+E007F).
fn in_tag_sequence(chars: &[char], i: usize) -> bool {
    let mut start = i;
    while start > 0 && is_tag(chars[start - 1]) {
        start -= 1;
    }
    let mut end = i;
    while end + 1 < chars.len() && is_tag(chars[end + 1]) {
        end += 1;
    }
    start > 0
        && chars[start - 1] == '\u{1F3F4}'
        && chars[end] == '\u{E007F}'
        && chars[start..end]
            .iter()
            .all(|&t| matches!(t, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}'))
}

/// Marks that are drawn on, above or below the character before them (not spacing
/// marks, which take room of their own).
fn stacks(c: char) -> bool {
    matches!(
        c.general_category(),
        GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: Field = Field {
        max_chars: 24,
        emoji_joiners: false,
    };
    const CHAT: Field = Field {
        max_chars: 300,
        emoji_joiners: true,
    };

    #[test]
    fn ordinary_text_of_many_scripts_passes() {
        for ok in [
            "Ada",
            "José",
            "Jose\u{301}",
            "Việt Nam",
            "ศรีสุข",
            "שָׁלוֹם",
            "क्षत्रिय",
            "محمد",
            "བསྒྲུབས",
            "李小龍",
            "❤\u{FE0F} Ada",
            "😀😀",
            "👍🏽",
        ] {
            assert_eq!(check(ok, NAME), Ok(ok), "{ok:?}");
        }
        assert!(check("\u{1F469}\u{200D}\u{1F4BB} coding", CHAT).is_ok());
        // Scotland's flag: black flag, tags g b s c t, cancel tag.
        let scotland = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}";
        assert!(check(scotland, CHAT).is_ok());
    }

    #[test]
    fn invisible_text_is_refused() {
        for bad in [
            "",
            "   ",
            "\u{034F}",
            "\u{FE0F}",
            "\u{E0100}",
            "\u{17B4}",
            "\u{0301}",
            "\u{FFF0}",
            "\u{E0080}",
            "\u{200D}",
            "\u{3164}",
            "\u{2800}",
            "\u{200D}\u{200D}",
        ] {
            assert_eq!(check(bad, CHAT), Err(TextError::Invisible), "{bad:?}");
        }
    }

    #[test]
    fn characters_drawn_as_nothing_or_anything_are_refused() {
        // In front of a bot's name: unassigned, default-ignorable, private use, format.
        for c in [
            '\u{FFF0}',
            '\u{E0080}',
            '\u{E01F0}',
            '\u{E000}',
            '\u{202E}',
            '\u{200B}',
            '\u{034F}',
            '\u{180B}',
            '\u{FDD0}',
        ] {
            let text = format!("{c}Bot 3 (hard)");
            assert_eq!(
                check(&text, NAME),
                Err(TextError::Forbidden { c, at: 1 }),
                "{text:?}"
            );
        }
        // Joiners: not in names; in chat only between two visible characters.
        assert!(check("A\u{200D}B", NAME).is_err());
        assert!(check("A \u{200D}", CHAT).is_err());
        // Variation selectors only after something drawn, and not two in a row.
        assert!(check("A \u{FE0F}", NAME).is_err());
        assert!(check("A\u{FE0F}\u{FE0F}", NAME).is_err());
        // Tags only in a flag's sequence.
        assert!(check("A\u{E0067}\u{E007F}", CHAT).is_err());
        assert!(check("\u{1F3F4}\u{E0067}\u{E0062}", CHAT).is_err());
    }

    #[test]
    fn stacked_marks_are_refused_in_every_script() {
        assert_eq!(
            check(&format!("Z{}", "\u{489}".repeat(23)), NAME),
            Err(TextError::Stacked)
        );
        assert_eq!(
            check(&format!("\u{E01}{}", "\u{E49}".repeat(23)), NAME),
            Err(TextError::Stacked)
        );
        // Alternating blocks (a Latin stroke, a Hebrew accent) counts as one run.
        assert_eq!(
            check(&format!("a{}", "\u{336}\u{592}".repeat(100)), CHAT),
            Err(TextError::Stacked)
        );
        assert!(check(&format!("a{}", "\u{301}".repeat(MAX_MARKS_IN_A_ROW)), NAME).is_ok());
    }

    #[test]
    fn length_counts_characters_after_trimming() {
        assert_eq!(
            check(&format!("  {}  ", "é".repeat(24)), NAME).map(str::len),
            Ok(48)
        );
        assert_eq!(
            check(&"a".repeat(25), NAME),
            Err(TextError::TooLong { max: 24, count: 25 })
        );
    }
}
