"""Measuring the memory judge: a bilingual golden set and the scorer behind `manage.py eval_judge`.

See README.md in this folder for the case format and how the score is computed.
"""
