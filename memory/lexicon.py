"""English and Chinese vocabularies the memory code recognises by itself, whatever a model answers.

One module, four questions, each a small function over plain text:

- `is_explicit_request(text)`: does the user's own message ask to remember, correct or forget something
  ("remember that …", "from now on …", "forget …", "请记住", "以后", "忘记")? Explicit facts are active at
  once in every review mode (SPEC §8 "Suggestions"); the flush tool being called is not enough.
- `permission_grant(text)`: is a memory's sentence an instruction that grants the assistant permissions,
  skips confirmations or overrides its rules ("submit my orders without asking", "以后所有订单都不用确认，
  直接替我提交")? Such a sentence is dropped by validation: stored, it would act on every later turn.
- `credential_spans(text)` / `mask_credentials(text)`: secrets — passwords, PINs, one-time and
  verification codes, API keys and tokens, card numbers, national ID and passport numbers. A sentence
  holding one is dropped, and the secret is masked in the run's record.
- `is_sensitive(text)`: a high-impact fact (SPEC §8 "Sensitive facts") the judge did not mark. The
  vocabulary is small on purpose — precision matters more than recall, a false "sensitive" only asks the
  user once more: health conditions and treatments (diagnoses, chronic illnesses, mental health,
  pregnancy, medication; allergies and diets are NOT here: they are safety facts the user wants used),
  finances (salary, income, debt, loans, savings, net worth), identity documents, religion, politics
  (party, voting), sexuality and gender identity, precise whereabouts (a street address, a flat number,
  a live location; a city or a country is not sensitive).

Chinese has no spaces, so Chinese words are matched as substrings; English words on word boundaries.
"""

from __future__ import annotations

import re

from chat.terms import merged_spans
from memory import grants

MASK = "•••"


def _compile(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


# --- explicit requests ---------------------------------------------------------------------------

_EXPLICIT = _compile(
    # A request, not a recollection ("I remember when …", "我记得你说过" are not explicit).
    r"^\W*remember\b",
    r"\b(?:please|pls|can you|could you|you should|do|always|you must) remember\b",
    r"\bremember (?:that|this|it|my|me|i|i'm|i am|for me)\b|\bremember[:,]",
    r"\bdon'?t forget\b",
    r"\bforget (?:that|this|it|my|about|everything|what|all|i|i'm)\b|^\W*forget\b",
    r"\bstop remembering\b",
    r"\bfrom now on\b",
    r"\bgoing forward\b",
    r"\bin (?:the )?future\b",
    r"\bkeep in mind\b",
    r"\bmake a note\b|\bnote that\b",
    r"\bno longer\b",
    r"\bthat'?s (?:wrong|not right|not true|outdated)\b",
    r"\bcorrection\b",
    r"\bactually,",
    r"记住|记下|请记得|别忘了?|不要忘",
    # "以后" as "from now on" (leading a clause, or after 我/你/请), not "下班以后" (after work).
    r"(?:^|[，,。；;！!？?\s：:]|我|你|请)(?:以后|今后|往后)",
    r"从现在起|从现在开始|从今以后|从今往后",
    r"忘记|忘掉|别记|不要记|删掉.{0,6}记忆",
    r"不再|更正|纠正|说错了|记错了",
)


def is_explicit_request(text: str) -> bool:
    """Whether the user's message asks to remember, correct or forget something (SPEC §8)."""
    return bool(_EXPLICIT.search(text))


# --- permissions and rule overrides --------------------------------------------------------------


def permission_grant(text: str) -> bool:
    """Whether the sentence grants the assistant permissions, skips confirmations or overrides its rules,
    however it is written (memory.grants folds the text first)."""
    return grants.permission_grant(text)


# --- credentials ---------------------------------------------------------------------------------

_SECRET_WORD = (
    r"(?:passwords?|passcodes?|passphrases?|pass ?word|pw|pwd|pword|(?:door|garage|gate|alarm|entry|lock|safe|locker|"
    r"keypad|building|front door|back door|garage door|entrance) (?:codes?|combinations?|pins?)|combinations?|"
    r"pins?(?: codes?)?|one[- ]time (?:pass)?codes?|otps?|"
    r"verification codes?|security codes?|2fa codes?|auth(?:entication)? codes?|api[ _-]?keys?|secret keys?|"
    r"access tokens?|tokens?|cvv2?|cvc|card numbers?|credit card(?: numbers?)?|debit card(?: numbers?)?|"
    r"social security(?: numbers?)?|ssn|passport (?:numbers?|no\.?)|id (?:card )?numbers?|national id(?: numbers?)?)"
)
_ZH_SECRET_WORD = (
    r"(?:密码|口令|门禁码|门禁卡号|开门码|门锁码|车库码|车库门码|门码|支付密码|验证码|动态码|校验码|短信码|密钥|秘钥|令牌|卡号|银行卡号|信用卡号|身份证号码?|身份证|"
    r"护照号码?|社保号)"
)
# "my password is hunter2", "PIN: 4321", "api key = sk-…", "the password for my email is …"
_WORD_VALUE = re.compile(
    rf"\b{_SECRET_WORD}\b(?:\s+(?:for|of|to|on)\s+[^,.;:=]{{1,25}}?)?\s*(?:is|was|are|:|=)\s*[\"'“]?(?P<v>[^\s\"'”,;]{{3,}})",
    re.IGNORECASE,
)
# "PIN 4321", "OTP 558211": the word straight before something with a digit in it
_WORD_DIGITS = re.compile(rf"\b{_SECRET_WORD}\s*#?\s*(?P<v>[\w-]*\d[\w-]*)", re.IGNORECASE)
# "密码是abc123", "验证码：558211", "银行卡号 6222…"
_ZH_VALUE = re.compile(
    rf"{_ZH_SECRET_WORD}(?:[^，,。；;：:是为]{{0,6}})?(?:是|为|：|:|\s)\s*(?P<v>[^\s，,。；;]{{3,}})"
)
_ZH_DIGITS = re.compile(rf"{_ZH_SECRET_WORD}\s*(?P<v>[\w-]*\d[\w-]*)")
# Secrets recognisable on their own.
_RAW = _compile(
    r"(?P<key>\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}\b)",
    r"\b(?:ghp|gho|github_pat|xox[abprs]|AKIA|AIza)[A-Za-z0-9_-]{12,}\b",
    r"(?<!\d)\d{17}[\dXx](?![\dA-Za-z])",  # a Chinese resident ID number
    # Private keys (SSH, PGP, TLS), the whole block, or to the end when the block was cut short.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
    r"\bPuTTY-User-Key-File-\d[\s\S]*",
    # Tokens: JSON web tokens, bearer tokens, well-known prefixes, and any long run of key-like characters.
    r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}",
    r"\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}",
    r"\b(?:glpat|npm|hf|pypi|shpat|xapp|xoxe|sk_live|sk_test|rk_live|whsec|ya29)[_.-][A-Za-z0-9_-]{12,}",
    r"(?<![\w/+.-])(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{40,}={0,2}",
)
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def credential_spans(text: str) -> list[tuple[int, int]]:
    """Where secrets sit in `text` (start, end), merged and in order; empty when there is none."""
    spans: list[tuple[int, int]] = []
    for pattern in (_WORD_VALUE, _WORD_DIGITS, _ZH_VALUE, _ZH_DIGITS):
        spans += [m.span("v") for m in pattern.finditer(text)]
    spans += [m.span() for m in _RAW.finditer(text)]
    spans += [m.span() for m in _CARD.finditer(text) if _luhn(re.sub(r"\D", "", m[0]))]
    return merged_spans(spans)


def has_credential(text: str) -> bool:
    """Whether `text` holds a secret, however it is written (full-width, zero-width characters,
    Traditional Chinese: memory.grants.plain)."""
    return bool(credential_spans(text)) or bool(credential_spans(grants.plain(text)))


def mask_credentials(text: str) -> str:
    """`text` with every secret replaced by MASK. A secret only found once the text is made plain
    (memory.grants.plain: "密碼是…", full-width digits) is masked in the plain text, which is returned."""
    masked = _mask(text)
    if credential_spans(grants.plain(masked)):
        return _mask(grants.plain(masked))
    return masked


def _mask(text: str) -> str:
    for start, end in reversed(credential_spans(text)):
        text = text[:start] + MASK + text[end:]
    return text


# --- sensitive facts -----------------------------------------------------------------------------

_SENSITIVE = _compile(
    # health
    r"\b(?:diabet(?:es|ic)|cancer|tumou?r|hiv|aids|hepatitis|epilep(?:sy|tic)|asthma(?:tic)?|depress(?:ion|ed)|"
    r"anxiety disorder|bipolar|schizophreni\w*|adhd|autis(?:m|tic)|ptsd|ocd|eating disorder|anorexi\w*|"
    r"pregnan(?:t|cy)|miscarriage|infertil\w*|chemotherapy|dialysis|diagnos(?:ed|is)|chronic (?:illness|pain|"
    r"disease)|disabilit(?:y|ies)|disabled|antidepressants?|insulin|medication|prescri(?:bed|ption)|therapist|"
    r"psychiatri\w*|addict(?:ion|ed)|rehab|heart (?:disease|condition|attack)|stroke|surgery)\b",
    r"糖尿病|癌|肿瘤|艾滋|乙肝|肝炎|癫痫|哮喘|抑郁|焦虑症|双相|精神分裂|多动症|自闭症|孕|流产|不孕|化疗|透析|确诊|诊断|"
    r"慢性病|残疾|残障|抗抑郁|胰岛素|服药|吃药|心理医生|精神科|成瘾|戒毒|心脏病|中风|手术|高血压|病史",
    # finances
    r"\b(?:salary|income|earns?|wages?|debts?|in debt|loans?|mortgage|bankrupt\w*|net worth|savings|credit score|"
    r"owes?)\b",
    r"工资|薪水|月薪|年薪|收入|负债|欠款|欠债|贷款|房贷|车贷|破产|存款|资产|信用分|征信",
    # identity documents
    r"\b(?:passport|id card|identity card|driver'?s licen[cs]e|social security)\b",
    r"身份证|护照|驾照|驾驶证|社保卡|户口",
    # religion
    r"\b(?:muslim|islam\w*|christian|catholic|protestant|jewish|judaism|buddhist|hindu|sikh|atheist|agnostic|"
    r"religio(?:n|us)|church|mosque|synagogue|pray(?:s|ing)?)\b",
    r"信仰|基督|天主教|穆斯林|伊斯兰|佛教徒|信佛|信教|无神论|犹太教|印度教|宗教|礼拜|做祷告",
    # politics
    r"\b(?:democrat|republican|socialist|communist|votes? for|voted for|party member|"
    r"political views?|politically)\b",
    r"党员|政治立场|政治观点|投票给|支持.{0,4}党",
    # sexuality and gender identity
    r"\b(?:gay|lesbian|bisexual|homosexual|heterosexual|queer|transgender|trans woman|trans man|non-binary|"
    r"asexual|sexual orientation|sex life)\b",
    r"同性恋|异性恋|双性恋|性取向|跨性别|性生活|出柜",
    # precise whereabouts: a street address, a flat, a live location (not a city or a country)
    r"\b(?:lives|living|live|home|address) (?:is )?at \d+",
    r"\b\d+\s+\w+(?:\s\w+)?\s(?:street|st\.|road|rd\.|avenue|ave\.|lane|boulevard|blvd|drive|way)\b",
    r"\b(?:home address|street address|apartment \d|apt\.? ?\d|flat \d|room \d{3,}|zip code|postcode)\b",
    r"\b(?:currently|right now) (?:at|in) (?:the )?\w+ (?:hotel|hospital|station|airport)\b",
    r"\b(?:my|live) location\b",
    r"住址|家庭地址|详细地址|门牌|\d+号楼|\d+单元|\d+室|\d+号院|路\d+号|街\d+号|实时位置",
)


def is_sensitive(text: str) -> bool:
    """Whether the sentence is a high-impact fact the user should confirm before it is kept."""
    return bool(_SENSITIVE.search(text))
