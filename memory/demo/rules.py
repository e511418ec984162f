"""The offline demo judge's rules (memory.demo): what a user's sentence states about them, if anything —
a stable preference or fact, a lasting preference about how to be served, a time-bound fact with its
end date — and the key and pin such a memory gets. English and (roughly) Chinese."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from memory import lexicon

CLEAR = re.compile(
    r"\bforget (?:everything|all)(?: (?:about me|you know about me|you know))?\b|忘(?:掉|记)(?:关于我的)?(?:一切|所有)",
    re.I,
)
FORGET = re.compile(
    r"\b(?:forget|stop remembering|don't remember|do not remember)\b\s*(?P<rest>.*)|(?:忘掉|忘记|别记)(?P<zh>.*)", re.I
)
REMEMBER = re.compile(r"^\s*(?:please\s+)?remember(?:\s+that)?[:,]?\s*|^\s*(?:请)?记住[:：，,]?\s*", re.I)
_OTHER_PERSON = re.compile(
    r"\b(?:friend|friend's|friends|he|she|his|her|him|my (?:wife|husband|son|daughter|mother|father|mom|dad|boss|"
    r"colleague|brother|sister|partner|kids?))\b|朋友|同事|他|她|老婆|老公|孩子|妈妈|爸爸",
    re.I,
)
_ONE_OFF = re.compile(
    r"\b(?:today|tonight|this time|right now|at the moment|just this once|for this (?:answer|question|one))\b"
    r"|今天|这次|这一次|此刻|刚才",
    re.I,
)
_REQUEST = re.compile(
    r"\?\s*$|？\s*$|^\s*(?:can|could|would|will) you\b|^\s*(?:please|suggest|recommend|help|show|tell|give|find|list)\b"
    r"|^\s*(?:what|how|which|why|where|when|who)\b|^\s*i(?:'d| would) like\b|^\s*i (?:want|need)\b"
    r"|帮我|推荐|吗\s*$|想要|想换|怎么",
    re.I,
)
_PREFERENCE = re.compile(
    r"^\s*i(?:'ve| have)?\s+(?:always\s+|really\s+|still\s+|now\s+|definitely\s+)*"
    r"(?:like|liked|love|loved|prefer|preferred|enjoy|enjoyed)\s+(?P<thing>[^,.;!—–]+)(?P<rest>.*)$",
    re.I,
)
_REASON = re.compile(
    r"\b(?:they'?re|they are|it'?s|it is)\s+(?:so\s+|very\s+|really\s+)?(?:easy|easier)\s+to\s+(?P<x>[^,.;!]+)", re.I
)
_FACTS = [
    (
        re.compile(
            r"^\s*i(?:'m| am)\s+(?P<x>(?:a\s+)?(?:vegetarian|vegan|lactose intolerant|left-handed|right-handed|diabetic"
            r"|colou?r-?blind)|allergic to [^,.;!]+)",
            re.I,
        ),
        "Is {x}",
    ),
    (re.compile(r"^\s*i\s+wear\s+(?P<x>glasses|contact lenses|contacts|hearing aids)", re.I), "Wears {x}"),
    (re.compile(r"^\s*i\s+live\s+in\s+(?P<x>[^,.;!]+)", re.I), "Lives in {x}"),
    (re.compile(r"^\s*i\s+speak\s+(?P<x>[^,.;!]+)", re.I), "Speaks {x}"),
    (re.compile(r"^\s*i\s+(?:don'?t|do not|never)\s+eat\s+(?P<x>[^,.;!]+)", re.I), "Does not eat {x}"),
    (re.compile(r"^\s*i\s+work\s+as\s+(?P<x>[^,.;!]+)", re.I), "Works as {x}"),
]
_ZH_PREFERENCE = re.compile(
    r"^\s*我(?:一直|很|比较|还是|现在|更|最|向来|其实)*(?:喜欢|偏好|爱用|习惯用)(?P<thing>[^，,。；;！!]+)(?P<rest>.*)$"
)
# Lasting preferences about how to be served: a lasting marker, then what the preference is about.
_LASTING = re.compile(
    r"\bfrom now on\b|\balways\b|\bin (?:the )?future\b|\bgoing forward\b|\bwith me\b"
    r"|\bkeep (?:your|the) (?:answers|replies|responses)\b|以后|今后|从现在起|每次|总是|一律"
    r"|\b(?:in|for) this project\b|(?:在)?这个项目(?:里|中)?",
    re.I,
)
_LANGUAGES = {
    "english": "英文",
    "chinese": "中文",
    "french": "法语",
    "german": "德语",
    "japanese": "日语",
    "spanish": "西班牙语",
}
_EN_LANGUAGE = re.compile(
    r"\b(?:answer|reply|respond|write|talk|speak)(?: to me| me)? in (?P<x>" + "|".join(_LANGUAGES) + r")\b", re.I
)
_ZH_LANGUAGE = re.compile(r"用(?P<x>中文|英文|英语|日语|法语|德语)(?:来)?(?:回答|回复|和我说|跟我说|交流)")
_SERVICE = [
    # (pattern, English memory, Chinese memory)
    (re.compile(r"\bmetric\b|公制", re.I), "Prefers metric units", "偏好公制单位"),
    (re.compile(r"\bimperial\b|英制", re.I), "Prefers imperial units", "偏好英制单位"),
    (re.compile(r"\bcelsius\b|摄氏", re.I), "Prefers temperatures in Celsius", "温度偏好用摄氏度"),
    (re.compile(r"\bfahrenheit\b|华氏", re.I), "Prefers temperatures in Fahrenheit", "温度偏好用华氏度"),
    (
        re.compile(r"\b(?:short|shorter|brief|concise)\b|简短|简洁|短一点", re.I),
        "Prefers short answers",
        "偏好简短的回答",
    ),
    (re.compile(r"\b(?:detailed|in-depth|thorough)\b|详细", re.I), "Prefers detailed answers", "偏好详细的回答"),
    (re.compile(r"\bbullet(?:ed)? points?\b|要点", re.I), "Prefers answers as bullet points", "偏好要点式的回答"),
    (re.compile(r"\btables?\b|表格", re.I), "Prefers answers as tables", "偏好表格形式的回答"),
    (re.compile(r"\b(?:casual|informal)\b|随意|轻松", re.I), "Prefers a casual tone", "偏好轻松随意的语气"),
    (re.compile(r"\bformal\b|正式", re.I), "Prefers a formal tone", "偏好正式的语气"),
]
_REFUSED = re.compile(r"\b(?:drop|no|not|less|stop|don'?t|without)\b|别|不要|不用|不想", re.I)
_CJK = re.compile(r"[\u4e00-\u9fff]")


def service_preference(sentence: str) -> str | None:
    """A lasting preference about how the user wants to be served, as a memory, or None."""
    if not _LASTING.search(sentence):
        return None
    chinese = bool(_CJK.search(sentence))
    if m := _EN_LANGUAGE.search(sentence):
        name = m["x"].lower()
        return f"希望用{_LANGUAGES[name]}回答" if chinese else f"Prefers replies in {name.capitalize()}"
    if m := _ZH_LANGUAGE.search(sentence):
        return f"希望用{m['x']}回答"
    # The first kind mentioned wins ("只认摄氏度" is about Celsius), unless it is refused ("drop the formal
    # tone", "别给我华氏度").
    found = [
        (m.start(), en, zh)
        for pattern, en, zh in _SERVICE
        if (m := pattern.search(sentence)) and not _REFUSED.search(sentence[max(0, m.start() - 12) : m.start()])
    ]
    if not found:
        return None
    _, en, zh = min(found)
    return zh if chinese else en


_ZH_FACTS = re.compile(r"^\s*我(?P<x>戴眼镜|吃素|不吃[^，,。；;！!]+|对[^，,。；;！!]+过敏|住在[^，,。；;！!]+)")
SENTENCES = re.compile(r"[^.!?。！？;；]+[.!?。！？;；]?")

# Things that are "the same preference": a new statement about one updates the other.
_TOPICS = {
    "screen": ("screen", "phone", "屏", "手机"),
    "diet": ("vegetarian", "vegan", "meat", "eat", "food", "素", "吃"),
    "drink": ("coffee", "tea", "咖啡", "茶"),
    "language": ("speak", "language"),
    "home": ("live", "住"),
    "reply_language": ("replies in", "中文回答", "英文回答", "英语回答"),
    "units": ("metric", "imperial", "公制", "英制"),
    "temperature": ("celsius", "fahrenheit", "摄氏", "华氏"),
    "length": ("short answers", "detailed answers", "简短的回答", "详细的回答"),
    "format": ("bullet", "tables", "要点", "表格"),
    "tone": ("tone", "语气"),
}
# A "thing" that only points elsewhere: nothing to remember without what it refers to.
_EN_POINTERS = {"it", "that", "this", "them", "those", "these", "that one", "this one", "the same", "one"}
_ZH_POINTERS = ("它", "这个", "那个", "这款", "那款", "这种", "那种", "一样的")
_STOPWORDS = {
    "prefers",
    "prefer",
    "preference",
    "preferences",
    "finds",
    "them",
    "easier",
    "with",
    "that",
    "this",
    "about",
    "my",
    "the",
    "and",
    "for",
    "now",
    "please",
    "answers",
    "replies",
    "偏好",
}


def _mentions(text: str, word: str) -> bool:
    if word.isascii():
        return re.search(rf"\b{word}", text) is not None  # "phone" matches "phones", "eat" not "great"
    return word in text


def _topics(text: str) -> set[str]:
    low = text.lower()
    return {name for name, words in _TOPICS.items() if any(_mentions(low, w) for w in words)}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in _STOPWORDS}


def related(a: str, b: str) -> bool:
    return bool(_topics(a) & _topics(b)) or bool(_words(a) & _words(b))


def same(a: str, b: str) -> bool:
    """The same sentence, give or take case and a final full stop."""
    return a.rstrip(".。!！ ").casefold() == b.rstrip(".。!！ ").casefold()


def _tidy(thing: str) -> str:
    thing = re.sub(r"\s+(?:now|these days|nowadays|anymore|more)$", "", thing.strip(), flags=re.I)
    if re.fullmatch(r"(?:big|large|bigger|larger)(?:-|\s)?screens?(?:\s+phones?)?", thing, re.I):
        return "large-screen phones"
    return thing


def _english_statement(sentence: str) -> str | None:
    if m := _PREFERENCE.match(sentence):
        if _tidy(m["thing"]).lower() in _EN_POINTERS:
            return None
        content = f"Prefers {_tidy(m['thing'])}"
        if reason := _REASON.search(m["rest"]):
            content += f", finds them easier to {reason['x'].strip()}"
        return content
    for pattern, template in _FACTS:
        if m := pattern.match(sentence):
            return template.format(x=m["x"].strip())
    return None


def _chinese_statement(sentence: str) -> str | None:
    if m := _ZH_PREFERENCE.match(sentence):
        thing = m["thing"].strip().rstrip("了啦呢吧哦")  # "我现在更喜欢大屏手机了" prefers 大屏手机
        if thing.startswith(_ZH_POINTERS):
            return None
        if thing in {"大屏", "大屏幕", "小屏", "小屏幕"}:
            thing = thing[:2] + "手机"
        content = f"偏好{thing}"
        rest = re.sub(r"^[，,\s]*(?:平时|因为|觉得)?", "", m["rest"]).rstrip("。！!")
        if "方便" in rest:
            content += f"，认为{rest}"
        return content
    if m := _ZH_FACTS.match(sentence):
        return m["x"]
    return None


def statement_content(sentence: str) -> str | None:
    """The memory a sentence states about the user, or None (question, other people, one-off, rule)."""
    sentence = REMEMBER.sub("", sentence).strip()
    refused = lexicon.permission_grant(sentence) or lexicon.has_credential(sentence)
    if not sentence or refused or _OTHER_PERSON.search(sentence) or _ONE_OFF.search(sentence):
        return None
    if preference := service_preference(sentence):
        return preference
    if _REQUEST.search(sentence):
        return None
    return _english_statement(sentence) or _chinese_statement(sentence)


# The single-valued preference a memory holds (memory.models.MemoryKey), by what it says.
_KEYS = [
    (re.compile(r"^Prefers replies in |^希望用.+回答"), "reply_language"),
    (re.compile(r"metric|imperial|公制|英制"), "units"),
    (re.compile(r"short answers|detailed answers|简短的回答|详细的回答"), "answer_length"),
    (re.compile(r"tone|语气"), "tone"),
    (re.compile(r"^Lives in |^住在"), "home_city"),
    (re.compile(r"^Is (?:a )?(?:vegetarian|vegan)$|^吃素$"), "diet"),
]
# Pinned: how the user wants to be served, and facts never to miss.
_PIN = re.compile(r"^Prefers replies in |^希望用.+回答|metric|imperial|公制|英制|allergic|过敏|vegetarian|vegan|吃素")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_UNTIL = re.compile(
    r"^\s*i(?:'m| am)\s+(?:in|staying in|visiting|working from)\s+(?P<place>[A-Z][\w -]*?)\s+until\s+"
    r"(?:(?P<weekday>" + "|".join(_WEEKDAYS) + r")|(?P<day>\d{4}-\d{2}-\d{2}))\b",
    re.I,
)
_ZH_THIS_WEEK = re.compile(
    r"^\s*我(?:这周|本周|这个星期)(?:都|一直)?在(?P<place>[^，,。；;！!\s]+?)(?:出差|旅游|度假|开会)?(?:[，,。！!]|$)"
)


def time_bound(sentence: str, sent: date | None) -> tuple[str, str] | None:
    """A time-bound fact and its end date ("I'm in Tokyo until Friday"), or None."""
    if sent is None:
        return None
    if m := _UNTIL.match(sentence):
        if m["day"]:
            return f"Is in {m['place'].strip()}", m["day"]
        ahead = (_WEEKDAYS.index(m["weekday"].lower()) - sent.weekday()) % 7 or 7
        return f"Is in {m['place'].strip()}", (sent + timedelta(days=ahead)).isoformat()
    if m := _ZH_THIS_WEEK.match(sentence):
        return f"这周在{m['place']}", (sent + timedelta(days=6 - sent.weekday() or 7)).isoformat()
    return None


# Projects (SPEC §9): a sentence about the piece of work rather than the person ("The thesis is due in June.",
# "The client uses PostgreSQL 16.", "论文六月底截止。"), and a preference said for this project only.
_WORK_FACT = re.compile(
    r"^\s*(?:the|our|this)\s+(?:thesis|project|client|customer|report|deadline|paper|talk|presentation|app|"
    r"website|site|server|database|codebase|repo|book|trip|launch|release|budget|team)\b[^?]*?\b(?:is|are|was|"
    r"uses|use|runs|run|needs|need|must|should|has|have|will|targets|ships|starts|ends)\b[^?]*$"
    r"|^\s*(?:论文|项目|这个项目|我们的项目|客户|报告|截止日期|服务器|数据库)[^?？吗]+$",
    re.I,
)
_FOR_THIS_PROJECT = re.compile(r"\b(?:in|for) this project\b|这个项目", re.I)


def project_statement(sentence: str) -> str | None:
    """The memory a sentence states about the piece of work, or None."""
    sentence = REMEMBER.sub("", sentence).strip()
    if not _WORK_FACT.match(sentence) or lexicon.has_credential(sentence) or lexicon.permission_grant(sentence):
        return None
    text = sentence.rstrip(".。!！ ")
    return text[:1].upper() + text[1:]


def for_this_project(sentence: str) -> bool:
    """Whether a preference is said for this project only ("in this project, keep answers short")."""
    return bool(_FOR_THIS_PROJECT.search(sentence))


def memory_extras(content: str) -> dict[str, Any]:
    """The key and pin the demo judge gives a memory."""
    extras: dict[str, Any] = {}
    key = next((name for pattern, name in _KEYS if pattern.search(content)), None)
    if key:
        extras["key"] = key
    if _PIN.search(content):
        extras["pin"] = True
    return extras
