"""The page at / in a real browser: Debian's chromium, driven by Selenium through chromedriver.

CI always runs it (`make test` installs chromium when it is missing); elsewhere it skips,
saying why, only when no browser or driver is found.
"""

import json
import os
import shutil

import pytest
from serving import running_server

from conftest import tiny_experiment, two_way_tokenizer, write_adapter, write_checkpoint

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
SENTENCE = "the small dog sees a bird."
# five lines: more than the server's --max-sentences 2, so the page sends three requests
LINES = [SENTENCE, "the dog sees the cat.", "we sleep.", "a very small bird has slept.", "I run."]
KEY = "page-key"


@pytest.fixture(scope="module")
def server(tmp_path_factory, corpus_dir, tokenizer):
    directory = tmp_path_factory.mktemp("page")
    heads = tiny_experiment(corpus_dir, "model.attention.type=multihead", "model.attention.heads=2")
    additive = tiny_experiment(corpus_dir)
    two_way = tiny_experiment(corpus_dir, "data.directions=[en-de,de-en]")
    specs = [
        f"multihead={write_checkpoint(directory / 'heads.pt', heads, tokenizer)}",
        f"additive={write_checkpoint(directory / 'additive.pt', additive, tokenizer)}",
        f"two-way={write_checkpoint(directory / 'two.pt', two_way, two_way_tokenizer(tokenizer))}",
    ]
    checkpoints = [f"--checkpoint={spec}" for spec in specs]
    with running_server(directory / "server.log", *checkpoints, "--max-sentences", 2) as s:
        yield s


@pytest.fixture(scope="module")
def keyed(tmp_path_factory, corpus_dir, tokenizer):
    """A server started with --api-key KEY."""
    directory = tmp_path_factory.mktemp("keyed")
    checkpoint = write_checkpoint(directory / "demo.pt", tiny_experiment(corpus_dir), tokenizer)
    with running_server(
        directory / "server.log", "--checkpoint", f"demo={checkpoint}", "--api-key", KEY
    ) as s:
        yield s


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        message = "no chromium and chromedriver on PATH (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run the browser test")
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1366,900")  # a laptop screen
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_translates_and_draws_the_attention(server, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(server.url + "/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 3)
    labels = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#model-b option")]
    assert labels == [
        "none",
        "multihead (en→de, rnnsearch, multihead)",
        "additive (en→de, rnnsearch, additive)",
        "two-way (en→de de→en, rnnsearch, additive)",
    ]
    Select(browser.find_element(By.ID, "model-a")).select_by_value("multihead")
    Select(browser.find_element(By.ID, "model-b")).select_by_value("additive")
    browser.find_element(By.ID, "source").send_keys("\n".join(LINES))
    browser.find_element(By.ID, "translate").click()
    wait.until(lambda b: "done" in b.find_element(By.ID, "status").text)
    assert len(browser.find_elements(By.CSS_SELECTOR, ".column svg.heatmap")) == 2  # side by side
    for model in ("multihead", "additive"):
        column = browser.find_element(By.CSS_SELECTOR, f'.column[data-model="{model}"]')
        status, answer = server.translate([{"src": line, "id": model} for line in LINES[2:4]])
        translations = [t.text for t in column.find_elements(By.CSS_SELECTOR, ".translation")]
        assert len(translations) == len(LINES)  # every line, though a request holds two
        assert translations[2:4] == [best["tgt"].strip() for best in answer[0]]

    for model in ("multihead", "additive"):
        status, answer = server.translate([{"src": SENTENCE, "id": model, "attention": True}])
        assert status == 200
        best = answer[0][0]
        column = browser.find_element(By.CSS_SELECTOR, f'.column[data-model="{model}"]')
        assert column.find_element(By.CSS_SELECTOR, ".translation").text == best["tgt"].strip()
        cells = column.find_elements(By.CSS_SELECTOR, "svg.heatmap rect.cell")
        attention = best["attention"]
        assert len(cells) == len(attention["tgt_tokens"]) * len(attention["src_tokens"])

    heads = browser.find_element(By.CSS_SELECTOR, '.column[data-model="multihead"] .heads')
    assert [b.text for b in heads.find_elements(By.TAG_NAME, "button")] == [
        "average of heads",
        "head 1",
        "head 2",
    ]
    heads.find_elements(By.TAG_NAME, "button")[2].click()  # head 2: the map is redrawn
    cell = browser.find_element(By.CSS_SELECTOR, '.column[data-model="multihead"] rect.cell')
    ActionChains(browser).move_to_element(cell).perform()
    tooltip = browser.find_element(By.ID, "tooltip")
    wait.until(lambda _: tooltip.is_displayed())
    assert tooltip.text.endswith(f"{float(cell.get_attribute('data-weight')):.3f}")
    browser.save_screenshot(str(tmp_path / "page.png"))


def test_each_translation_is_shown_beside_its_source_and_an_error_clears_them(server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(server.url + "/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 3)
    Select(browser.find_element(By.ID, "model-a")).select_by_value("additive")
    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys("\n".join(LINES))
    browser.find_element(By.ID, "translate").click()
    wait.until(lambda b: "done" in b.find_element(By.ID, "status").text)
    expected = []  # in requests of two, as the page sends them
    for start in range(0, len(LINES), 2):
        items = [{"src": line, "id": "additive"} for line in LINES[start : start + 2]]
        status, answer = server.translate(items)
        assert status == 200
        expected += [best["tgt"].strip() for best in answer[0]]
    rows = browser.find_elements(By.CSS_SELECTOR, '.column[data-model="additive"] .sentence')
    shown = [
        (
            [label.text for label in row.find_elements(By.CSS_SELECTOR, ".label")],
            row.find_element(By.CSS_SELECTOR, ".source").text,
            row.find_element(By.CSS_SELECTOR, ".translation").text,
        )
        for row in rows
    ]
    labels = ["SOURCE", "TRANSLATION"]  # as CSS capitalises them
    assert shown == [(labels, *row) for row in zip(LINES, expected, strict=True)]

    beam = browser.find_element(By.ID, "beam")
    beam.send_keys("99")  # above the server's max_beam: every request is refused
    browser.find_element(By.ID, "translate").click()
    status = browser.find_element(By.ID, "status")
    wait.until(lambda _: "error" in status.get_attribute("class"))
    assert status.text.startswith("422: body.0.beam: Input should be less than or equal to 16")
    assert not browser.find_elements(By.CSS_SELECTOR, "#results .column")  # no stale results
    beam.clear()


def test_a_file_dropped_on_the_page_comes_back_translated_to_download(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    subtitles = tmp_path / "film.srt"
    subtitles.write_text(
        "1\n00:00:01,000 --> 00:00:03,500\nthe small dog\nsees a bird.\n\n"
        "2\n00:00:04,000 --> 00:00:06,000\nwe sleep.\n",
        "utf-8",
    )
    wait = WebDriverWait(browser, 60)
    browser.get(server.url + "/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 3)
    picker = browser.find_element(By.ID, "file")
    assert {".srt", ".docx", ".po", ".md"} <= set(picker.get_attribute("accept").split(","))
    Select(browser.find_element(By.ID, "model-a")).select_by_value("additive")
    picker.send_keys(str(subtitles))
    browser.find_element(By.ID, "translate-file").click()
    link = browser.find_element(By.ID, "download")
    wait.until(lambda _: link.is_displayed())
    assert link.get_attribute("download") == "film.de.srt"
    assert link.get_attribute("href").startswith("blob:")  # the answer, to download
    lines = browser.find_element(By.ID, "file-result").text.splitlines()  # and shown
    assert lines[:2] == ["1", "00:00:01,000 --> 00:00:03,500"]
    assert lines[lines.index("2") + 1] == "00:00:04,000 --> 00:00:06,000"
    assert "film.srt translated" in browser.find_element(By.ID, "status").text

    browser.execute_script(  # a file dropped on the page, as a file manager drops one
        """const file = new File([arguments[0]], "notes.md", {type: "text/markdown"});
        const dropped = new DataTransfer();
        dropped.items.add(file);
        document.dispatchEvent(new DragEvent("drop", {dataTransfer: dropped}));""",
        "# the small dog\n\nwe sleep.\n",
    )
    wait.until(lambda _: link.get_attribute("download") == "notes.de.md")
    assert browser.find_element(By.ID, "file-result").text.startswith("# ")

    picker.clear()
    broken = tmp_path / "broken.srt"
    broken.write_text("garbage\n", "utf-8")
    picker.send_keys(str(broken))
    browser.find_element(By.ID, "translate-file").click()
    status = browser.find_element(By.ID, "status")
    wait.until(lambda _: "error" in status.get_attribute("class"))
    assert status.text.startswith("422: broken.srt: not a srt file its library (srt) can read")


def test_a_model_that_writes_several_languages_gets_a_language_picker(server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(server.url + "/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 3)
    picker = browser.find_element(By.ID, "tgt-lang-label")
    assert not picker.is_displayed()  # the first model writes German only
    Select(browser.find_element(By.ID, "model-a")).select_by_value("two-way")
    assert picker.is_displayed()
    languages = Select(browser.find_element(By.ID, "tgt-lang"))
    assert [option.text for option in languages.options] == ["de", "en"]
    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys(SENTENCE)
    shown = []
    for language in ("en", "de"):
        languages.select_by_value(language)
        browser.find_element(By.ID, "translate").click()
        wait.until(lambda b: "done" in b.find_element(By.ID, "status").text)
        column = browser.find_element(By.CSS_SELECTOR, '.column[data-model="two-way"]')
        shown.append(column.find_element(By.CSS_SELECTOR, ".translation").text)
    for language, text in zip(("en", "de"), shown, strict=True):
        request = {"src": SENTENCE, "id": "two-way", "tgt_lang": language}
        status, answer = server.translate([request])
        assert status == 200 and text == answer[0][0]["tgt"].strip()
    Select(browser.find_element(By.ID, "model-a")).select_by_value("additive")
    assert not picker.is_displayed()


def open_without_a_key(browser, url):
    """Opens the page at `url` as a new tab would: without a key kept from an earlier test."""
    browser.get(url + "/static/style.css")  # the same origin, which holds sessionStorage
    browser.execute_script("sessionStorage.clear()")
    browser.get(url + "/")


def test_the_page_asks_for_the_api_key_and_again_after_a_cancel_or_a_wrong_key(keyed, browser):
    """Behind --api-key the page still loads; its first API call gets 401, so it asks for the
    key. Cancelled, it says what to do and offers to ask again; a wrong key is asked again at
    once; with the right one the models load."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    open_without_a_key(browser, keyed.url)
    prompt = wait.until(expected_conditions.alert_is_present())
    assert "API key" in prompt.text
    prompt.dismiss()
    button = browser.find_element(By.ID, "enter-key")
    wait.until(lambda _: button.is_displayed())
    assert "needs its API key" in browser.find_element(By.ID, "status").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#model-a option")
    button.click()
    for answer, question in (("wrong-key", "needs its API key"), (KEY, "was refused")):
        prompt = wait.until(expected_conditions.alert_is_present())
        assert question in prompt.text
        prompt.send_keys(answer)
        prompt.accept()
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 1)
    assert "1 model loaded" in browser.find_element(By.ID, "status").text
    assert not button.is_displayed()


def test_translate_after_a_cancelled_prompt_asks_for_the_key_again(keyed, browser):
    """With no models listed (the prompt was cancelled), Translate asks for the key again;
    cancelled once more, it says a key is needed, not "done"; given, it translates."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    open_without_a_key(browser, keyed.url)
    wait.until(expected_conditions.alert_is_present()).dismiss()
    status = browser.find_element(By.ID, "status")
    wait.until(lambda _: "needs its API key" in status.text)
    browser.find_element(By.ID, "source").send_keys(SENTENCE)
    browser.find_element(By.ID, "translate").click()
    prompt = wait.until(expected_conditions.alert_is_present())
    assert prompt.text == "This server needs its API key:"
    prompt.dismiss()
    wait.until(lambda _: "needs its API key" in status.text)
    assert "done" not in status.text and not browser.find_elements(By.CSS_SELECTOR, ".column")
    browser.find_element(By.ID, "translate").click()
    prompt = wait.until(expected_conditions.alert_is_present())
    prompt.send_keys(KEY)
    prompt.accept()
    wait.until(lambda _: "done" in status.text)
    auth = {"Authorization": f"Bearer {KEY}"}
    _, answer = keyed.translate([{"src": SENTENCE, "id": "demo"}], headers=auth)
    shown = browser.find_element(By.CSS_SELECTOR, '.column[data-model="demo"] .translation')
    assert shown.text == answer[0][0]["tgt"].strip()
    assert not browser.find_element(By.ID, "enter-key").is_displayed()


def test_the_api_docs_render_from_local_files(server, browser):
    """Swagger UI draws the schema with nothing fetched from elsewhere (this machine reaches
    no CDN), from the relative openapi.json."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    browser.get(server.url + "/docs")
    wait = WebDriverWait(browser, 60)
    paths = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".opblock-summary-path"))
    shown = {path.text.replace("\u200b", "") for path in paths}
    assert {"/translator/translate", "/translator/models", "/translator/limits"} <= shown
    assert browser.find_element(By.CSS_SELECTOR, ".info .title").text.startswith("nmt")
    assert not browser.find_elements(By.CSS_SELECTOR, ".btn.authorize")  # no key to give


def test_the_api_docs_behind_a_key_open_and_try_it_out_with_the_key(keyed, browser):
    """Swagger UI loads without the key; its "Authorize" takes it, and "Try it out" sends it
    as a bearer token."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    browser.get(keyed.url + "/docs")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".btn.authorize"))[0].click()
    browser.find_element(By.ID, "auth-bearer-value").send_keys(KEY)
    browser.find_element(By.CSS_SELECTOR, ".auth-btn-wrapper button.authorize").click()
    browser.find_element(By.CSS_SELECTOR, ".auth-btn-wrapper button.btn-done").click()
    limits = browser.find_element(By.ID, "operations-default-list_limits_translator_limits_get")
    limits.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    wait.until(lambda _: limits.find_elements(By.CSS_SELECTOR, ".try-out__btn"))[0].click()
    limits.find_element(By.CSS_SELECTOR, ".execute").click()
    answered = ".live-responses-table .response"  # the row below the table's heading
    status = wait.until(lambda _: limits.find_elements(By.CSS_SELECTOR, answered))[0]
    assert status.find_element(By.CSS_SELECTOR, ".response-col_status").text == "200"
    curl = limits.find_element(By.CSS_SELECTOR, ".curl-command").text
    assert f"-H 'Authorization: Bearer {KEY}'" in curl
    body = status.find_element(By.CSS_SELECTOR, ".response-col_description pre")
    auth = {"Authorization": f"Bearer {KEY}"}
    expected = keyed.request("GET", "/translator/limits", headers=auth)
    assert (200, json.loads(body.text)) == expected


GERMAN = "der Hund sieht die Katze."


def translated_on_page(browser, wait, model):
    """The page's column of `model` after it translated GERMAN."""
    from selenium.webdriver.common.by import By

    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys(GERMAN)
    browser.find_element(By.ID, "translate").click()
    wait.until(lambda b: "done" in b.find_element(By.ID, "status").text)
    return browser.find_element(By.CSS_SELECTOR, f'.column[data-model="{model}"]')


def shows_the_pivoted_answer(column, status, answer):
    """The column shows what the API answers for the same request: translation and pivot."""
    from selenium.webdriver.common.by import By

    assert status == 200 and answer[0][0]["pivot"]
    shown = column.find_element(By.CSS_SELECTOR, ".translation").text
    assert shown == answer[0][0]["tgt"].strip()
    assert column.find_element(By.CSS_SELECTOR, ".pivot").text == answer[0][0]["pivot"].strip()


@pytest.fixture(scope="module")
def three_way_server(tmp_path_factory, corpus_dir, tokenizer):
    """A model of de-en, en-de, en-xx and xx-en: German to xx goes through English."""
    from nmt.data.tokenizer import Tokenizer, Vocab

    directory = tmp_path_factory.mktemp("three-way")
    corpus = shutil.copytree(corpus_dir, directory / "corpus")  # the shared one stays as it is
    for split in ("train", "valid", "test"):
        german = (corpus / f"{split}.de").read_text("utf-8").splitlines()
        xx = "".join(" ".join(reversed(line.split())) + "\n" for line in german)
        (corpus / f"{split}.xx").write_text(xx, "utf-8")
    config = tiny_experiment(corpus, "data.directions=[de-en,en-de,en-xx,xx-en]")
    vocab = Vocab(tokenizer.src.model_proto, ["de", "en", "xx"])
    checkpoint = write_checkpoint(directory / "three.pt", config, Tokenizer(vocab, vocab))
    with running_server(directory / "server.log", f"--checkpoint=three={checkpoint}") as s:
        yield s


def test_a_pair_the_model_never_trained_goes_through_a_pivot_on_the_page(three_way_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(three_way_server.url + "/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 1)
    sources = Select(browser.find_element(By.ID, "src-lang"))
    assert [option.text for option in sources.options] == ["auto", "de", "en", "xx"]
    into = Select(browser.find_element(By.ID, "tgt-lang"))
    assert into.first_selected_option.text == "en"  # the model's own (de-en), not the first
    sources.select_by_value("de")
    into.select_by_value("xx")
    column = translated_on_page(browser, wait, "three")
    request = {"src": GERMAN, "id": "three", "tgt_lang": "xx", "src_lang": "de"}
    shows_the_pivoted_answer(column, *three_way_server.translate([request]))


@pytest.fixture(scope="module")
def chain_server(tmp_path_factory, corpus_dir, tokenizer):
    """Two models, de-en and en-xx: German to xx is a chain of the two."""
    directory = tmp_path_factory.mktemp("chain")
    corpus = shutil.copytree(corpus_dir, directory / "corpus")
    for split in ("train", "valid", "test"):
        german = (corpus / f"{split}.de").read_text("utf-8").splitlines()
        xx = "".join(" ".join(reversed(line.split())) + "\n" for line in german)
        (corpus / f"{split}.xx").write_text(xx, "utf-8")
    de_en = tiny_experiment(corpus, "data.src_lang=de", "data.tgt_lang=en")
    en_xx = tiny_experiment(corpus, "data.src_lang=en", "data.tgt_lang=xx")
    specs = [
        f"--checkpoint=de-en={write_checkpoint(directory / 'de-en.pt', de_en, tokenizer)}",
        f"--checkpoint=en-xx={write_checkpoint(directory / 'en-xx.pt', en_xx, tokenizer, seed=2)}",
    ]
    with running_server(directory / "server.log", *specs) as s:
        yield s


def test_a_language_another_served_model_writes_on_into_is_a_chain_on_the_page(
    chain_server, browser
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(chain_server.url + "/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 2)
    Select(browser.find_element(By.ID, "model-a")).select_by_value("de-en")
    into = Select(browser.find_element(By.ID, "tgt-lang"))
    assert [option.text for option in into.options] == ["en", "xx"]
    into.select_by_value("xx")
    column = translated_on_page(browser, wait, "de-en")
    request = {"src": GERMAN, "id": "de-en", "tgt_lang": "xx", "then": "en-xx"}
    shows_the_pivoted_answer(column, *chain_server.translate([request]))


@pytest.fixture(scope="module")
def adapter_server(tmp_path_factory, corpus_dir, tokenizer):
    """A model and a LoRA adapter on it."""
    directory = tmp_path_factory.mktemp("adapter")
    base = write_checkpoint(directory / "base.pt", tiny_experiment(corpus_dir), tokenizer)
    adapted = tiny_experiment(corpus_dir, f"train.init_from={base}", "train.adapters.rank=2")
    adapter = write_adapter(directory / "legal.pt", base, adapted)
    specs = [f"--checkpoint=base={base}", f"--adapter=legal={adapter}"]
    with running_server(directory / "server.log", *specs) as s:
        yield s


def test_an_adapter_is_offered_beside_its_base_and_translates_side_by_side(adapter_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(adapter_server.url + "/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#model-a option")) == 2)
    Select(browser.find_element(By.ID, "model-a")).select_by_value("base+legal")
    Select(browser.find_element(By.ID, "model-b")).select_by_value("base")
    source = browser.find_element(By.ID, "source")
    source.clear()
    source.send_keys(SENTENCE)
    browser.find_element(By.ID, "translate").click()
    wait.until(lambda b: "done" in b.find_element(By.ID, "status").text)
    shown = {}
    for model in ("base+legal", "base"):
        column = browser.find_element(By.CSS_SELECTOR, f'.column[data-model="{model}"]')
        shown[model] = column.find_element(By.CSS_SELECTOR, ".translation").text
    routes = {"base+legal": {"adapter": "legal"}, "base": {}}
    for model, route in routes.items():
        status, answer = adapter_server.translate([{"src": SENTENCE, "id": "base", **route}])
        assert status == 200 and shown[model] == answer[0][0]["tgt"].strip()
