# ApiToken now belongs to the access app (issue 28): removed from this app's state only; the
# table stays where it is and access.ApiToken uses it (db_table = "yullu_site_apitoken").

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("yullu_site", "0002_broker_message"),
        ("access", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiToken")],
            database_operations=[],
        ),
    ]
