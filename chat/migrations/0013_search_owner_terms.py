from django.db import migrations


def reinstall_index(apps, schema_editor):
    """SQLite: the full-text index is made again with each entry's owner word (chat/search/sqlite.py), from
    the entries already written. PostgreSQL's index is unchanged."""
    from chat.search import install, uninstall

    if schema_editor.connection.vendor == "sqlite":
        uninstall(schema_editor)
        install(schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0012_marker_data'),
    ]

    operations = [
        migrations.RunPython(reinstall_index, migrations.RunPython.noop),
    ]
