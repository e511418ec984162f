from chat.terms import stem, terms


def test_english_word_forms_meet_on_one_stem() -> None:
    assert terms("Peanuts") == terms("peanut") == ["peanut"]
    assert stem("phones") == stem("phone") == "phone"
    assert stem("allergies") == "allergy"


def test_short_and_non_alphabetic_words_are_kept_whole() -> None:
    assert terms("is 3000 gas") == ["is", "3000", "gas"]


def test_a_han_run_gives_every_two_character_word_in_it() -> None:
    assert terms("我想买智能手机") == ["我想", "想买", "买智", "智能", "能手", "手机"]
    assert "手机" in terms("手机")


def test_a_lone_han_character_is_a_term_and_mixed_text_splits_by_script() -> None:
    assert terms("我 like 手机s") == ["我", "like", "手机", "s"]


def test_full_width_text_is_normalised() -> None:
    assert terms("ＰＨＯＮＥ１２") == terms("phone12")
