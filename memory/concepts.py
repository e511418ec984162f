"""What a dish, a drink or a place to eat implies about what is in it: a small vocabulary that lets recall
(memory.recall) connect a request to the dietary facts it bears on when no word is shared and a small
embedding model does not know the connection either.

multilingual-e5-small puts "推荐几道川菜" (recommend some Sichuan dishes) no closer to "不吃辣，吃了会胃疼"
(doesn't eat spicy food) than to any other food memory: it does not know that Sichuan food is spicy. A user's
diet, allergies and intolerances are the facts they most want used (memory.lexicon keeps them out of the
sensitive ones for that reason), so the few concepts they turn on are written down here.

A text names a concept when it holds one of its words: English words as `chat.terms` index terms (light
stems, so "steaks" is "steak"), Chinese ones as substrings (Chinese has no spaces). A memory and a message
that name the same concept share its term (`~name`, which no word can produce), weighed like any other
term. Polarity is not read: "不吃辣" and "爱吃辣" are both about spicy food, and both bear on a Sichuan menu.
Words are chosen so that they rarely mean anything else ("酒" alone would match 酒店, a hotel).
"""

from __future__ import annotations

from functools import lru_cache

from chat.terms import is_han, terms

CONCEPTS: dict[str, str] = {
    "spicy": "spicy chili chilli jalapeno sriracha curry vindaloo sichuan szechuan hunan "
    "辣 川菜 湘菜 火锅 麻婆 水煮鱼 剁椒 花椒",
    "meat": "meat steak steakhouse beef pork bacon ham sausage burger barbecue bbq chicken lamb veal "
    "vegetarian vegan 吃素 素食 吃肉 肉类 牛肉 猪肉 羊肉 鸡肉 牛排 烤肉 烧烤",
    "seafood": "seafood fish sushi sashimi shrimp prawn crab lobster oyster shellfish mussel salmon tuna "
    "海鲜 鱼肉 虾 蟹 寿司 生蚝 三文鱼",
    "alcohol": "alcohol alcoholic wine beer cocktail whisky whiskey vodka gin sake bar pub brewery "
    "喝酒 饮酒 戒酒 啤酒 白酒 红酒 葡萄酒 鸡尾酒 酒吧",
    "caffeine": "coffee espresso latte cappuccino caffeine decaf 咖啡 拿铁 浓缩",
    "dairy": "dairy milk cheese lactose yogurt yoghurt pizza 牛奶 奶酪 乳糖 酸奶 奶制品",
    "gluten": "gluten wheat bread pasta pizza coeliac celiac 麸质 小麦 面包 面食",
    "nuts": "peanut nut almond cashew walnut hazelnut pistachio satay 花生 坚果 核桃 腰果 杏仁 宫保",
    "sugar": "sugar sugary dessert cake candy diabetes diabetic 糖 甜食 甜点 蛋糕 奶茶",
    "salt": "salt salty sodium hypertension 盐 咸 高血压 口味重",
}


def _index() -> tuple[dict[str, frozenset[str]], tuple[tuple[str, str], ...]]:
    by_term: dict[str, set[str]] = {}
    chinese: list[tuple[str, str]] = []
    for name, words in CONCEPTS.items():
        for word in words.split():
            if is_han(word[0]):
                chinese.append((word, f"~{name}"))
            else:
                for term in terms(word):
                    by_term.setdefault(term, set()).add(f"~{name}")
    return {term: frozenset(names) for term, names in by_term.items()}, tuple(chinese)


_BY_TERM, _CHINESE = _index()


@lru_cache(maxsize=4096)
def concept_terms(text: str) -> frozenset[str]:
    """The concepts `text` names, as terms (`~spicy`): empty for most texts."""
    found: set[str] = set()
    for term in terms(text):
        found |= _BY_TERM.get(term, frozenset())
    found.update(name for word, name in _CHINESE if word in text)
    return frozenset(found)
