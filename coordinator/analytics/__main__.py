"""``python -m coordinator.analytics JOURNAL... --out DIR``, and the file to give spark-submit:

    spark-submit --master spark://HOST:7077 --driver-memory 4g \\
        "$(python -c 'import coordinator.analytics.__main__ as m; print(m.__file__)')" \\
        JOURNAL... --out hdfs:///analytics --report report/

Imports are absolute: spark-submit runs this file as a script, not as part of the package.
"""

from coordinator.analytics.command import analyze

if __name__ == "__main__":
    analyze(prog_name="python -m coordinator.analytics")
