"""Settings: validation and the defaults that depend on the model."""

import pytest

from textclf.settings import Settings
from textclf.errors import SettingsError


def test_model_dependent_defaults_fill_in_only_what_was_left_out():
    assert (Settings().epochs, Settings().lr_schedule) == (10, "constant")
    assert (Settings(model="cnn").epochs, Settings(model="cnn").lr_schedule) == (20, "cosine")
    assert Settings(model="cnn", epochs=3, lr_schedule="linear").epochs == 3
    stored = Settings(model="cnn").to_dict()
    assert Settings.from_dict(stored) == Settings(model="cnn")  # a saved run rebuilds to the same settings
    assert Settings.from_dict({"model": "cnn"}).epochs == 20


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"epochs": 0}, "epochs must be 1 to 10,000"),
        ({"dropout": 1.0}, "dropout must be in [0, 1)"),
        ({"augment": "shift,rotate"}, "augment must be comma-separated names from shift, flip"),
        ({"lr_schedule": "step"}, "lr_schedule must be one of linear, constant, cosine"),
    ],
)
def test_bad_values_name_the_setting(changes, message):
    with pytest.raises(SettingsError, match=message.replace("[", r"\[").replace(")", r"\)")):
        Settings(**changes)


def test_augmentations_parse_the_list():
    assert Settings(augment=" shift , flip").augmentations == ("shift", "flip")
    assert Settings(augment="").augmentations == ()


def test_settings_are_one_flat_record_composed_of_parts():
    """Each part holds its own fields; Settings holds them all as one flat record, so a run's record and a model
    file read as before (a stored dict without the newer fields takes their defaults)."""
    import dataclasses

    from textclf.settings import (
        DataSettings,
        DeviceSettings,
        NetworkSettings,
        OptimizerSettings,
        SearchSettings,
        Settings,
        VectorizerSettings,
    )

    parts = (VectorizerSettings, NetworkSettings, OptimizerSettings, DataSettings, DeviceSettings, SearchSettings)
    names = [f.name for part in parts for f in dataclasses.fields(part)]
    assert len(names) == len(set(names)) and set(names) == {f.name for f in dataclasses.fields(Settings)}
    settings = Settings(hidden=64, learning_rate=0.01, backend="xla", search="off", pinned=("learning_rate",))
    assert Settings.from_dict(settings.to_dict()) == settings
    older = {k: v for k, v in Settings().to_dict().items() if k not in ("multi_label", "metric")}
    assert Settings.from_dict(dict(reversed(list(older.items())))) == Settings()


def test_every_face_reads_stop_words_none_as_no_stop_words():
    """The CLI's --stop-words none, the estimator's stop_words="none" and the HTTP job API's "stop_words": "none"
    give the same Settings (the API refused it, with a message that said to pass 'none')."""
    from textclf.estimator import TextClassifier
    from textclf.frontends.cli.base import settings_from_options

    for spelled in ("none", "None", "NONE"):
        api = Settings.from_user({"stop_words": spelled})
        assert api.stop_words is None and "stop_words" in api.pinned
        assert TextClassifier(stop_words=spelled).settings.stop_words is None
        assert settings_from_options(stop_words=spelled).stop_words is None
    assert Settings.from_user({"augment": "none"}).augment == ""


def test_the_command_line_offers_the_settings_that_say_how_in_their_fields():
    """Each training option's flag, type and help text live beside its field's default (settings.option), and the
    CLI's options are built from them: every offered field has a flag, typer's type and its default in its help."""
    import dataclasses

    from textclf.frontends.cli.base import TRAINING_OPTIONS
    from textclf.settings import Settings, command_line_options

    assert TRAINING_OPTIONS == command_line_options()
    offered = {f.name for f in dataclasses.fields(Settings) if "help" in f.metadata}
    assert {o.field for o in TRAINING_OPTIONS} == offered and len(TRAINING_OPTIONS) == len(offered)
    by_field = {o.field: o for o in TRAINING_OPTIONS}
    assert by_field["learning_rate"].flag == "lr" and by_field["ngram_max"].flag == "ngrams"
    assert "(default 0.001; searched)" in by_field["learning_rate"].help
    assert "cnn 20" in by_field["epochs"].help and "default 10" in by_field["epochs"].help  # the text and image models'
    assert all("{" not in o.help for o in TRAINING_OPTIONS)  # every placeholder filled
