"""Measuring the memory judge: a bilingual golden set and the scorer behind `manage.py eval_judge`.

See README.md in this folder for the case format and how the score is computed.
"""

from pathlib import Path
from typing import Any

import yaml

# libyaml's parser where PyYAML was built with it: the same data, several times faster than the pure-Python one.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path | str) -> Any:
    """The data of a YAML file (safe tags only). Raises yaml.YAMLError or OSError."""
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_LOADER)
