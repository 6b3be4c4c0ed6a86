"""Look-alike letters NFKC leaves alone, and letters that render as nothing: data for ``normalize.fold``.

Kept apart from the normaliser so the table can grow without the logic around it.
"""

from __future__ import annotations

# Look-alikes NFKC leaves alone. Upper and lower case, mapped before case folding
# (the Greek capital eta looks like H, its small letter like n).
CONFUSABLES: dict[str, str] = {
    # Cyrillic
    "А": "A",
    "В": "B",
    "Е": "E",
    "Ё": "E",
    "К": "K",
    "М": "M",
    "Н": "H",
    "О": "O",
    "Р": "P",
    "С": "C",
    "Т": "T",
    "Х": "X",
    "У": "Y",
    "Ѕ": "S",
    "І": "I",
    "Ї": "I",
    "Ј": "J",
    "Ԛ": "Q",
    "Ԝ": "W",
    "Ү": "Y",
    "З": "3",
    "Ь": "b",
    "Ӏ": "l",
    "а": "a",
    "в": "b",
    "е": "e",
    "ё": "e",
    "к": "k",
    "м": "m",
    "н": "h",
    "о": "o",
    "р": "p",
    "с": "c",
    "т": "t",
    "х": "x",
    "у": "y",
    "ѕ": "s",
    "і": "i",
    "ї": "i",
    "ј": "j",
    "һ": "h",
    "ԁ": "d",
    "ԛ": "q",
    "ԝ": "w",
    "ӏ": "l",
    "ү": "y",
    "ҽ": "e",
    "ь": "b",
    "п": "n",
    "г": "r",
    "ɡ": "g",
    "ѡ": "w",
    "ԍ": "g",
    # Greek
    "Α": "A",
    "Β": "B",
    "Ε": "E",
    "Ζ": "Z",
    "Η": "H",
    "Ι": "I",
    "Κ": "K",
    "Μ": "M",
    "Ν": "N",
    "Ο": "O",
    "Ρ": "P",
    "Τ": "T",
    "Υ": "Y",
    "Χ": "X",
    "Ϲ": "C",
    "Ϳ": "J",
    "α": "a",
    "β": "b",
    "γ": "y",
    "ε": "e",
    "η": "n",
    "ι": "i",
    "κ": "k",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "σ": "o",
    "τ": "t",
    "υ": "u",
    "χ": "x",
    "ω": "w",
    "ϲ": "c",
    "ϳ": "j",
    "ς": "c",
    # Armenian, Cherokee and Latin variants
    "օ": "o",
    "ս": "u",
    "հ": "h",
    "ո": "n",
    "ց": "g",
    "ք": "p",
    "զ": "q",
    "ᴄ": "c",
    "ı": "i",
    "ȷ": "j",
    "ɑ": "a",
    "ɩ": "i",
    "ʟ": "l",
    "ᴏ": "o",
    "ᴜ": "u",
    "ᴠ": "v",
    "ᴡ": "w",
    "ᴢ": "z",
    "ꮯ": "c",
    "Ꮯ": "C",
    "Ꭼ": "E",
    "Ꭺ": "A",
    "Ꮢ": "R",
    "Ꮃ": "W",
    "Ꮇ": "M",
    "Ꮋ": "H",
    "Ꭲ": "T",
    "Ꮪ": "S",
}
# Punctuation look-alikes NFKC leaves alone, as the ASCII character the patterns and repairs expect. Every
# dash (Unicode category Pd) folds to "-" by category in ``normalize``; these are the rest of the dash-likes
# (minus signs, bars) and the quotes, slashes, full stops, colons and bars a secret or a command can be
# written with. Letters of other scripts that look like punctuation (Japanese "ー", Chinese "一") are left
# alone: folding them would rewrite ordinary text in those languages.
PUNCTUATION: dict[str, str] = {
    # minus signs and horizontal bars outside Pd (U+207B, U+208B become U+2212 under NFKC)
    "\u2212": "-",  # MINUS SIGN
    "\u2796": "-",  # HEAVY MINUS SIGN
    "\u02d7": "-",  # MODIFIER LETTER MINUS SIGN
    "\u2043": "-",  # HYPHEN BULLET
    "\u2cba": "-",  # COPTIC CAPITAL LETTER DIALECT-P NI
    "\u2cbb": "-",  # COPTIC SMALL LETTER DIALECT-P NI
    "\u23af": "-",  # HORIZONTAL LINE EXTENSION
    "\u2500": "-",  # BOX DRAWINGS LIGHT HORIZONTAL
    "\u2501": "-",  # BOX DRAWINGS HEAVY HORIZONTAL
    "\u2574": "-",  # BOX DRAWINGS LIGHT LEFT
    "\u2576": "-",  # BOX DRAWINGS LIGHT RIGHT
    # single quotes and primes
    "\u2018": "'",
    "\u2019": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u2035": "'",
    "\u02b9": "'",
    "\u02bc": "'",
    "\u02c8": "'",
    "\u05f3": "'",
    "\ua78c": "'",
    # double quotes
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u02ba": '"',
    "\u05f4": '"',
    "\u3003": '"',
    # slashes and backslashes
    "\u2044": "/",  # FRACTION SLASH
    "\u2215": "/",  # DIVISION SLASH
    "\u29f8": "/",  # BIG SOLIDUS
    "\u2571": "/",
    "\u27cb": "/",
    "\u3033": "/",
    "\u2216": "\\",  # SET MINUS
    "\u29f5": "\\",
    "\u29f9": "\\",
    "\u2572": "\\",
    "\u27cd": "\\",
    # full stops (U+2024 ONE DOT LEADER and the fullwidth stop are NFKC's)
    "\u0701": ".",
    "\u0702": ".",
    "\ua60e": ".",
    "\ua4f8": ".",
    "\U00010a50": ".",
    # colons, low lines, bars
    "\u2236": ":",  # RATIO
    "\ua789": ":",
    "\u02d0": ":",
    "\u0589": ":",
    "\u05c3": ":",
    "\u0703": ":",
    "\u0704": ":",
    "\u16ec": ":",
    "\u02cd": "_",  # MODIFIER LETTER LOW MACRON
    "\u2223": "|",  # DIVIDES
    "\u2502": "|",  # BOX DRAWINGS LIGHT VERTICAL (also what NFKC makes of U+FFE8)
    "\u2503": "|",
    "\u2758": "|",
    "\u23d0": "|",
}
# Line breaks among the control characters (what str.splitlines breaks at): folded to a newline, so a
# payload split by them is joined like one split into lines, and words they separate stay apart.
LINE_BREAKS = frozenset({0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x85})
# Invisible characters that stand for a separator: a reader may take a soft hyphen for the dash it
# replaced or a zero-width space for a space. ``normalize.views`` removes them (a word split by them reads
# as one) and also views the text with each as that separator.
SEPARATING_INVISIBLES: dict[int, str] = {0x00AD: "-", 0x200B: " ", 0x180E: " "}
# Letters that render as nothing but are not in the format category.
INVISIBLE: frozenset[int] = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E, 0x17B4, 0x17B5})
