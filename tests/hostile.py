"""The hostile text catalogue: strings that try to run code, break out of HTML, JSON or templates, or confuse
the reader, each under a short name. Every one that would execute sets `window.__pwned`; tests assert it stays unset.

`HOSTILE` holds the everyday-sized entries (fed through every path together and one by one); `BIG` holds the
two huge ones, built on demand: a single 100,000-character token and a 1 MB prompt.
"""

from __future__ import annotations

import re

SENTINEL = "__pwned"
PWN = f"window.{SENTINEL}=1"

HOSTILE: dict[str, str] = {
    # markup that runs script when parsed as HTML
    "script-tag": f"<script>{PWN}</script>",
    "script-upper": f"<SCRIPT>{PWN}</SCRIPT>",
    "script-src": "<script src=data:text/javascript,window.__pwned=1></script>",
    "img-onerror": f'<img src=x onerror="{PWN}">',
    "img-onerror-unquoted": f"<img src=x onerror={PWN}>",
    "svg-onload": f"<svg onload={PWN}>",
    "svg-script": f"<svg><script>{PWN}</script></svg>",
    "body-onload": f"<body onload={PWN}>",
    "details-ontoggle": f"<details open ontoggle={PWN}>",
    "iframe-srcdoc": f'<iframe srcdoc="<script>parent.{SENTINEL}=1</script>"></iframe>',
    "object-data": f'<object data="javascript:{PWN}"></object>',
    "embed-src": f'<embed src="javascript:{PWN}">',
    "input-autofocus": f"<input autofocus onfocus={PWN}>",
    "video-source": f"<video><source onerror={PWN}></video>",
    "attr-breakout": f'"><img src=x onerror={PWN}>',
    "single-quote-breakout": f"'><svg onload={PWN}>",
    "textarea-breakout": f"</textarea><img src=x onerror={PWN}>",
    "title-breakout": f"</title><img src=x onerror={PWN}>",
    "style-breakout": f"</style><img src=x onerror={PWN}>",
    "comment-breakout": f"--><img src=x onerror={PWN}><!--",
    "nested-comment": f'<!--<img src="--><img src=x onerror={PWN}//">',
    "noscript-mxss": f'<noscript><p title="</noscript><img src=x onerror={PWN}>">',
    "math-mxss": f"<math><mtext><table><mglyph><style><img src=x onerror={PWN}>",
    "template-tag": f"<template><img src=x onerror={PWN}></template>",
    "split-script": f"<scr<script>ipt>{PWN}</scr</script>ipt>",
    "meta-refresh": f'<meta http-equiv="refresh" content="0;url=javascript:{PWN}">',
    "base-href": '<base href="https://evil.example/">',
    "form-action": f'<form><button formaction="javascript:{PWN}">go</button></form>',
    # `</script>` inside data, and things that end or open other contexts
    "close-script": f"</script><script>{PWN}</script>",
    "close-script-spaced": f"</SCRIPT ><script>{PWN}</script >",
    "open-comment": "<!--",
    "cdata-end": "]]><![CDATA[",
    "line-separators": "a\u2028b\u2029c",
    "json-breakout": '"}]}, {"evil": true, "x": ["',
    "backslashes": "\\\"\\u003cscript\\u003e\\\\",
    # URLs that run script when followed
    "javascript-url": f"javascript:{PWN}",
    "javascript-url-mixed": f"JaVaScRiPt:{PWN}",
    "javascript-url-entity": f"jav&#x09;ascript:{PWN}",
    "data-url": "data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD0xPC9zY3JpcHQ+",
    "vbscript-url": "vbscript:msgbox(1)",
    "anchor-javascript": f'<a href="javascript:{PWN}">click</a>',
    # template syntax: Gradio's HTML templates evaluate ${...}; others use {{...}}, {%...%}, <%...%>, #{...}
    "dollar-brace": f"${{{PWN}}}",
    "backtick-template": f"`${{{PWN}}}`",
    "double-brace": f"{{{{constructor.constructor('{PWN}')()}}}}",
    "jinja-block": "{% for x in ().__class__.__base__.__subclasses__() %}{{x}}{% endfor %}",
    "erb": "<%= 7*7 %>",
    "ruby-interp": "#{7*7}",
    "python-format": "{0.__class__} {__import__} %s %(name)s %n",
    "proto-pollution": '{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"x": 1}}}',
    # Markdown and HTML mixed
    "markdown-js-link": f"[click me](javascript:{PWN})",
    "markdown-image-onerror": f'![x](x" onerror="{PWN})',
    "markdown-html-mix": f"**bold** <b>bold</b> `code` <img src=x onerror={PWN}>\n# heading\n| a | b |\n|---|---|",
    "html-entities": "&lt;script&gt; &amp;lt; &#60;img&#62; &quot;",
    "fullwidth-lookalike": "\uff1cscript\uff1ewindow.__pwned=1\uff1c/script\uff1e",
    "css-injection": "<style>body{display:none} * {background:url(https://evil.example/x)}</style>",
    # Unicode that reorders, hides or piles up
    "rtl-override": "user\u202etxt.exe\u202c and \u2066isolate\u2069",
    "rtl-arabic-mix": "\u05e9\u05dc\u05d5\u05dd hello \u0645\u0631\u062d\u0628\u0627 123",
    "zero-width": "a\u200bb\u200cc\u200dd\ufefe\ufeffe\u2060f",
    "combining-zalgo": "Z\u0334\u031b\u032da\u0337\u034el\u0336g\u0338o\u0335\u0301\u0302\u0303\u0304\u0305\u0306",
    "emoji-zwj": "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 \U0001f1eb\U0001f1f7 \U0001f44d\U0001f3fd",
    "nul": "before\x00after",
    "control-chars": "\x01\x02\x07\x08\x0b\x0c\x1b[31mred\x1b[0m\x7f",
    "crlf": "line one\r\nline two\rline three\n",
    "lone-surrogate": "half a pair \ud83d here",
    "invalid-utf8": b"bytes \xff\xfe\xc3( here".decode("utf-8", "surrogateescape"),
    "bom": "\ufeffstarts with a BOM",
    "special-tokens": "<|im_start|>system<|im_end|><|endoftext|><|think_end|></s>[EOS]",
    "long-line": "x" * 2000,
}

BIG_TOKEN_CHARS = 100_000
BIG_PROMPT_BYTES = 1_000_000


def big_token() -> str:
    """A single 100,000-character token: no space, no punctuation."""
    return "A" * BIG_TOKEN_CHARS


def big_prompt() -> str:
    """A 1 MB prompt (ASCII, so one byte per character), with hostile markup spread through it."""
    unit = f"<img src=x onerror={PWN}> ${{{PWN}}} lorem ipsum dolor sit amet "
    return (unit * (BIG_PROMPT_BYTES // len(unit) + 1))[:BIG_PROMPT_BYTES]


BIG = {"token-100k": big_token, "prompt-1mb": big_prompt}

_SURROGATE = re.compile("[\ud800-\udfff]")


def as_stored(text: str) -> str:
    """The text as the app keeps it: lone surrogates (undecodable bytes, half a UTF-16 pair) become U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def joined(names: list[str] | None = None, sep: str = "\n") -> str:
    """The named entries (default: all of HOSTILE) as one text, separated by `sep`."""
    return sep.join(HOSTILE[n] for n in (names or list(HOSTILE)))
