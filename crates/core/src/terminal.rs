//! What Taskkeeper shows on the owner's terminal of words that are not its own. Askers are
//! other people's agents, and their words (and a worker's, which may echo them, and names
//! and paths that came from outside) are printed by the CLI. A terminal acts on some
//! characters instead of showing them: an escape sequence sets the window title, clears the
//! screen or writes the clipboard; a bare carriage return overwrites a line; a bidi control
//! reorders what follows. [`visible`] is the one way such text is shown: every such
//! character written out as its escape, each line of it kept apart. The delivery side
//! ([`crate::delivery::terminal_safe`]) drops the same characters instead, as it writes into
//! an agent's input rather than before a person's eyes.

/// The explicit bidi formatting characters (embeddings, overrides, isolates and their ends):
/// the ones that reorder the text after them, which rustc also refuses in a literal.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A character a terminal acts on instead of showing: every control character (C0, DEL,
/// C1; ESC among them) except the line break and the tab, which carry the text's shape, and
/// the bidi controls.
pub fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// `text`, shown as what it is: every character that [`acts_on_terminal`] written as its
/// escape (ESC as `\u{1b}`), so nothing in it drives the terminal and the reader sees it was
/// there. A line break (`\n`, or `\r\n`) stays one, and the line after it starts with
/// `indent`, so that the caller keeps every line of the text under its label and none of
/// them can pass for a line of the caller's own; a bare `\r` is shown, never obeyed.
pub fn visible(text: &str, indent: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                out.push('\n');
                out.push_str(indent);
            }
            c if acts_on_terminal(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_shows_every_character_a_terminal_acts_on() {
        assert_eq!(
            visible(
                "a\x1b]0;title\x07b\x1b]52;c;eA==\x07c\x08d\re\u{9b}2Jf\u{202e}g\u{2066}h\u{7f}i\0j",
                ""
            ),
            "a\\u{1b}]0;title\\u{7}b\\u{1b}]52;c;eA==\\u{7}c\\u{8}d\\u{d}e\\u{9b}2Jf\\u{202e}g\\u{2066}h\\u{7f}i\\u{0}j"
        );
        assert_eq!(
            visible("plain — ünïcode ✓\tx", "  "),
            "plain — ünïcode ✓\tx"
        );
        let every: String = (0u32..=0x2070).filter_map(char::from_u32).collect();
        let shown = visible(&every, "");
        assert!(!shown.chars().any(acts_on_terminal), "{shown:?}");
        let acting = every.chars().filter(|&c| acts_on_terminal(c)).count();
        assert_eq!(acting, 32 - 2 + 1 + 32 + 5 + 4);
    }

    #[test]
    fn every_line_after_the_first_starts_with_the_indent() {
        assert_eq!(
            visible("one\r\ntwo\nthree\rover\n", "    "),
            "one\n    two\n    three\\u{d}over\n    "
        );
    }
}
