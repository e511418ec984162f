"""Is a sentence an instruction that grants the assistant permissions? (memory.lexicon.permission_grant)

A memory is a fact about the user. A sentence that waives a confirmation, lets the assistant act without
asking, sets earlier rules aside, claims the authority of the system or an administrator, or gives
standing consent to pay or order would act on every later turn once stored; validation drops it.

Rewording must not walk around the check, so the text is folded before matching (`fold`): Unicode NFKC
(full-width letters become ASCII), format and zero-width characters removed, a few Cyrillic and Greek
look-alike letters mapped to Latin ones, spaces between Chinese characters removed, Traditional Chinese
converted to Simplified (opencc-python-reimplemented), and case folded. The vocabulary below is then
written once, in Simplified Chinese and lower-case English, for what a grant *means*, not for a few
fixed wordings. memory/evals/guard.yaml measures it: phrasings that must be refused and look-alikes
("prefers to confirm orders by email", "住在确认路") that must be kept.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from opencc import OpenCC

# Latin look-alikes that NFKC leaves alone.
_CONFUSABLES = str.maketrans(
    "аеорсхуіјѕԁһкмтвнАЕОРСХУІЈЅКМТВНαεοριτνκυΑΕΟΡΙΤΝΚΥ’‘`´",
    "aeopcxyijsdhkmtbhAEOPCXYIJSKMTBHaeopitvkuAEOPITNKY''''",
)
_CJK = r"[\u3400-\u9fff\uf900-\ufaff]"
_CJK_GAP = re.compile(rf"(?<={_CJK})\s+(?={_CJK})")


@lru_cache(maxsize=1)
def _t2s() -> OpenCC:
    return OpenCC("t2s")


def simplified(text: str) -> str:
    """`text` with Traditional Chinese written in Simplified characters (anything else unchanged)."""
    return str(_t2s().convert(text))


def plain(text: str) -> str:
    """`text` as the checks read it: NFKC, no format characters, Latin look-alikes mapped, no spaces
    between Chinese characters, runs of spaces made one, Simplified Chinese."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf" and c not in "\u034f\u180e")
    text = text.translate(_CONFUSABLES)
    return simplified(_CJK_GAP.sub("", " ".join(text.split())))


def fold(text: str) -> str:
    """`plain(text)`, case folded."""
    return plain(text).casefold()


def _compile(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


_ACT = (
    r"submit|buy|purchase|pay|approve|accept|confirm|send|transfer|execute|place|sign|delete|share|order|reorder|"
    r"book|spend|charge|renew|subscribe|cancel|proceed|act|go ahead"
)
_CHECK = r"confirm\w*|approv\w*|verif\w*|check\w*|permission|consent|review\w*|sign-?off|validation|prompts?"
_RULES = (
    r"instructions?|rules?|guidelines?|system prompt|prompts?|restrictions?|safety|polic(?:y|ies)|guardrails?|"
    r"directives?|programming|constraints?|settings|limits?|filters?|protocols?|commands?"
)

_SKIP_ZH = r"跳过|省略|略过|免去|免除|豁免|取消|关闭|关掉|绕过|绕开|去掉|跳开|不走"
_CHECK_ZH = r"确认|审核|核实|核对|验证|审批|批准|检查|安全|同意|授权|把关|复核|请示"
_RULES_ZH = r"指令|规则|限制|设定|提示|要求|规定|指示|约束|原则|安全|命令|设置|政策|守则"
_ACT_ZH = r"付款|支付|下单|提交|转账|购买|买|订|签|删除|发送|执行|操作|处理|扣款|确认|续费|批准|同意|放行|汇款|结账"
_ENGLISH = [
    # Setting earlier rules aside.
    rf"\b(?:ignore|disregard|forget|override|bypass|overrule|set aside|throw out|drop|skip)\b.{{0,30}}\b(?:{_RULES})\b",
    r"\b(?:previous|prior|earlier|above|original|old)\s+(?:instructions?|rules?|directives?|prompts?)\b.{0,20}"
    r"\b(?:void|invalid|cancelled|no longer|obsolete|replaced|don'?t apply)",
    r"\b(?:your )?(?:instructions|rules|guidelines)\s+(?:have been|are now|were)\s+(?:updated|changed|replaced|lifted)",
    r"\bnew (?:rule|instruction|policy|directive)s?\s*[:：]",
    r"\b(?:never|don'?t|do not) refuse\b|\bno (?:restrictions|limits|filters|rules)\b|\bunrestricted\b|\bjailbr\w*",
    r"\b(?:developer|god|admin|jailbreak|unrestricted|dan|sudo) mode\b",
    # Skipping or waiving a confirmation.
    rf"\b(?:skip|skipping|waive|waiving|bypass|disable|turn off|switch off|remove|omit|drop|dispense with|"
    rf"suspend|forgo)\b.{{0,25}}(?:\b(?:{_CHECK}|safety|security)|{_CHECK_ZH})",
    rf"\b(?:{_CHECK})s?\b.{{0,20}}\b(?:is|are|be)\s+(?:not (?:required|needed|necessary)|unnecessary|optional|"
    r"waived|implied|given|assumed|disabled|off|skipped)\b",
    r"\bwithout\b.{0,25}\b(?:ask\w*|confirm\w*|approv\w*|permission|check\w*|consent|wait\w*|verif\w*|review\w*|"
    r"(?:my|an?) (?:ok|okay|input|go-?ahead|say-?so|yes|sign-?off))\b",
    r"(?<!\bi )(?<!\bwe )\b(?:do not|don'?t|never|no need to|stop|needn'?t|without)\b.{0,15}"
    r"\b(?:ask|check|confirm|verify|wait)\b.{0,25}"
    r"\b(?:before|first|me|my|permission|confirmation|approval|reply|answer|response)\b",
    r"(?<!\bi )(?<!\bwe )\b(?:don'?t|do not|no need to|never|don'?t bother(?: to)?|needn'?t)\s+"
    r"(?:ask|check|confirm|wait)(?:ing)?\b",
    r"\byou (?:don'?t|do not|no longer) need (?:my|to ask|to check|to confirm|permission|approval|consent)\b",
    r"\bno questions asked\b|\bask (?:no|zero) questions\b",
    # Acting without asking, with authority handed over.
    r"\b(?:you|assistant|memora|ai|model|bot)\b.{0,30}\b(?:allowed|authori[sz]ed|permitted|permission|free|entitled|"
    r"empowered|cleared)\b.{0,5}\bto\b",
    r"\b(?:allows?|lets?|authori[sz]es?|permits?|grants?|empowers?|entitles?)\b.{0,10}\b(?:you|assistant|memora|ai|"
    r"model|bot)\b",
    rf"(?<!\bi )\b(?:always|automatically)\b.{{0,15}}\b(?:{_ACT})\b",
    r"\bauto-?(?:approve|pay|confirm|submit|order|accept|purchase|buy)\w*",
    r"\byou have my (?:permission|consent|approval|blessing|authori[sz]ation)\b|\bon my behalf\b",
    r"\byou (?:can|may|should) (?:just |simply |freely |always )?(?:submit|order|buy|pay|book|send|delete|transfer|"
    r"approve|sign|share|spend|charge|reorder|cancel|use my|decide|act|proceed)\b",
    rf"\bgo ahead and (?:{_ACT})\b|\bjust (?:do it|go ahead|proceed)\b",
    rf"\b(?:{_ACT})\w*\b.{{0,25}}\b(?:immediately|right away|straight away|instantly|without delay)\b",
    r"\b(?:you have|you've got|you get|give you|grant you)\b.{0,10}\b(?:full|complete|total|unlimited|root|blanket)"
    r" (?:access|authority|permissions?|control|rights)\b",
    r"\b(?:unlimited|root|blanket) (?:access|authority|permissions?)\b",
    # Standing consent.
    r"\b(?:standing|permanent|blanket|ongoing|general|perpetual|advance) (?:consent|approval|permission|"
    r"authori[sz]ation|yes)\b",
    r"\bpre-?(?:approved?|authori[sz]ed?|confirmed)\b",
    r"\b(?:consider|treat|deem)\b.{0,30}\b(?:approved|confirmed|authori[sz]ed|consent|a yes|accepted)\b",
    r"\bassume (?:yes|i agree|my (?:consent|approval|agreement))\b|\bsilence (?:is|as|means) (?:consent|yes)\b",
    # Claims of system or administrator authority.
    r"^\W*(?:system|admin|administrator|developer|operator)\s*[:：]",
    r"\b(?:the )?system (?:requires?|says|instructs?|mandates?|demands?|orders?|override|message|notice|policy)\b",
    r"\bi(?:'m| am) (?:the|an|your) (?:admin|administrator|developer|operator|creator|owner|root)\b",
    r"(?<!\bwork )(?<!\bworks )(?<!\bworking )\bas (?:the|an|your) (?:admin|administrator|developer|operator|system)\b",
    r"\badmin(?:istrator)? (?:override|command|instruction|order|access|privileges?|rights|authority)\b",
    r"\b(?:obey|follow) (?:me|my (?:orders|commands|instructions)|memory)\b|\bmust obey\b",
    r"\b(?:all|every|other) users?(?:'s?)?\b",
]
_CHINESE = [
    rf"(?:{_SKIP_ZH}).{{0,6}}(?:{_CHECK_ZH})",
    r"(?:不用|无需|不需要|不必|用不着|免|不再需要|没必要|无须|不须)(?:再|每次|都)?(?:跟我|向我|和我|经过|征得|得到|等)?"
    r"我?的?(?:确认|核实|审核|审批|批准|同意|允许|问我|征求|询问|请示|回复|答复|授权|点头|许可)",
    r"(?:别|不要|不用|不必|无需)(?:再)?(?:问|征求|请示|询问|请求|确认|核实|审核|打扰)(?:我)?",
    r"(?:别|不要|不用|不必|无需)(?:再)?等(?:我|待)",
    rf"直接(?:替我|帮我|给我|为我)?(?:{_ACT_ZH})",
    r"(?:替我|帮我|代我|为我)(?:直接|自动|随时|自行)",
    rf"自动(?:{_ACT_ZH})",
    r"你(?:可以|能|有权|被允许|尽管|只管)(?:直接|随时|自行|自己决定|全权)",
    r"(?:授权|允许|准许|特许|批准)(?:你|助手|ai|模型|机器人)",
    r"全权|一律放行|全部放行|先斩后奏|不用请示|视为同意|默认(?:我)?(?:同意|批准|确认|授权|允许)",
    r"永久(?:授权|同意|许可)|(?:最高|完全|全部|所有|无限)的?权限|拥有.{0,4}权限",
    rf"(?:忽略|无视|不理会|不要理会|别管|忘掉|忘记|覆盖|绕过|推翻|抛开|废除|作废)(?:掉)?.{{0,10}}(?:{_RULES_ZH})",
    r"(?:之前|以前|原来|上面|先前)的?(?:所有)?(?:指令|规则|设定|要求)(?:都|全部)?(?:作废|无效|失效|不算)",
    r"系统(?:要求|规定|指示|通知|命令|提示|消息|设定|指令)|根据系统|系统[:：]|^(?:管理员|开发者)[:：]",
    r"我是(?:你的)?(?:管理员|开发者|管理者|系统|创造者|主人|运营者)",
    r"管理员(?:指示|命令|要求|授权|权限|模式|身份)",
    r"(?:必须|要)(?:服从|听从|听)我|听我的",
    r"(?:开发者|上帝|管理员|越狱|无限制)模式|越狱",
    r"(?:所有|全部|其他|每个)用户",
]
_GRANT = _compile(*_ENGLISH, *_CHINESE)


def permission_grant(text: str) -> bool:
    """Whether the sentence grants the assistant permissions, skips confirmations or overrides its rules."""
    return bool(_GRANT.search(fold(text)))
