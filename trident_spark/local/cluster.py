"""A local Spark standalone cluster (one master, one worker) from the pyspark install.

The pip ``pyspark`` package is a full Spark distribution: its directory is
a usable ``SPARK_HOME`` with ``bin/spark-class`` and ``bin/spark-submit``.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from trident_spark.local.java import require_java
from trident_spark.local.process import (
    LocalProcess,
    ServiceStartError,
    die_with_parent,
    free_port,
    wait_until,
)

__all__ = ["StandaloneCluster", "spark_home"]


def spark_home() -> Path:
    """The pyspark package directory, used as ``SPARK_HOME``.

    Examples
    --------
    >>> (spark_home() / "bin" / "spark-submit").exists()
    True
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise ServiceStartError("spark: pyspark is not installed: `pip install trident-spark`")
    return Path(spec.origin).parent


def _alive_workers(web_ui: str) -> int | None:
    """Alive workers the master reports, or ``None`` while its UI does not answer."""
    try:
        with urllib.request.urlopen(f"{web_ui}/json/", timeout=2.0) as response:
            state = json.load(response)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):
        return None
    return int(state.get("aliveworkers", 0))


def _bound_ports(log: Path) -> dict[str, int]:
    """The ports the master's services say they bound (``sparkMaster``, ``MasterUI``), from its log.

    A port asked for may have been taken by another process since it was found free; Spark then
    binds the next one, and says so only in its log.

    Examples
    --------
    >>> import tempfile
    >>> log = Path(tempfile.mkdtemp()) / "master.log"
    >>> _ = log.write_text("INFO Utils: Successfully started service 'MasterUI' on port 41235.")
    >>> _bound_ports(log)
    {'MasterUI': 41235}
    """
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return {}
    return {name: int(port) for name, port in
            re.findall(r"Successfully started service '(\w+)' on port (\d+)", text)}


class StandaloneCluster:
    """A Spark standalone master and one worker on 127.0.0.1, for tests and demos.

    Parameters
    ----------
    cores, memory
        What the worker offers to applications.
    timeout
        Seconds to wait for the master and for the worker to register.
    log_dir
        Where ``master.log``, ``worker.log`` and the worker's ``work/`` directory
        (executor logs) go; default a new temporary directory.
    keep_logs
        Keep them after a clean stop; they are always kept when startup fails.

    Examples
    --------
    >>> with StandaloneCluster() as cluster:  # doctest: +SKIP
    ...     done = cluster.submit(Path("examples/wordcount.py"), ["--help"])
    ...     done.returncode
    0
    """

    def __init__(
        self,
        *,
        cores: int = 2,
        memory: str = "2g",
        timeout: float = 120.0,
        log_dir: Path | None = None,
        keep_logs: bool = False,
    ) -> None:
        self.cores = cores
        self.memory = memory
        self.timeout = timeout
        self.keep_logs = keep_logs
        self._owns_log_dir = log_dir is None
        self._log_dir = log_dir
        self.spark_home = spark_home()
        self._master: LocalProcess | None = None
        self._worker: LocalProcess | None = None
        self._master_url: str | None = None
        self._web_ui_url: str | None = None

    @property
    def log_dir(self) -> Path:
        """Directory with ``master.log``, ``worker.log`` and ``work/`` (once started)."""
        if self._log_dir is None:
            raise RuntimeError("StandaloneCluster is not started: use it in a `with` block")
        return self._log_dir

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT`` of the running master."""
        if self._master_url is None:
            raise RuntimeError("StandaloneCluster is not started: use it in a `with` block")
        return self._master_url

    @property
    def web_ui_url(self) -> str:
        """``http://127.0.0.1:PORT`` of the master's web UI."""
        if self._web_ui_url is None:
            raise RuntimeError("StandaloneCluster is not started: use it in a `with` block")
        return self._web_ui_url

    def _env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(self.spark_home),
            SPARK_LOCAL_IP="127.0.0.1",
            # Without these, Python workers start the system python and hang.
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        env.update(extra or {})
        return env

    def start(self) -> StandaloneCluster:
        """Start the master, then the worker, and wait until the worker is registered.

        Raises
        ------
        ServiceStartError
            Naming the process, its log file and its last lines.
        """
        if self._master_url is not None:
            return self
        require_java(17)
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="trident-spark-cluster-"))
        self._log_dir.mkdir(parents=True, exist_ok=True)
        spark_class = str(self.spark_home / "bin" / "spark-class")
        port, ui_port, worker_ui_port = free_port(), free_port(), free_port()
        master_url = f"spark://127.0.0.1:{port}"
        web_ui = f"http://127.0.0.1:{ui_port}"

        def master_ready() -> bool:
            nonlocal master_url, web_ui
            bound = _bound_ports(self.log_dir / "master.log")
            if "sparkMaster" not in bound or "MasterUI" not in bound:
                return False
            master_url = f"spark://127.0.0.1:{bound['sparkMaster']}"
            web_ui = f"http://127.0.0.1:{bound['MasterUI']}"
            return _alive_workers(web_ui) is not None

        try:
            self._master = LocalProcess(
                "spark-master",
                [spark_class, "org.apache.spark.deploy.master.Master",
                 "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)],
                log_path=self.log_dir / "master.log",
                env=self._env(),
                cwd=self.log_dir,
            )  # fmt: skip
            wait_until(
                master_ready,
                timeout=self.timeout,
                process=self._master,
                what=f"spark master at {master_url}",
                interval=0.5,
            )
            self._worker = LocalProcess(
                "spark-worker",
                [spark_class, "org.apache.spark.deploy.worker.Worker", master_url,
                 "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                 "--webui-port", str(worker_ui_port),
                 "--work-dir", str(self.log_dir / "work")],
                log_path=self.log_dir / "worker.log",
                env=self._env(),
                cwd=self.log_dir,
            )  # fmt: skip
            wait_until(
                lambda: (_alive_workers(web_ui) or 0) >= 1,
                timeout=self.timeout,
                process=self._worker,
                what=f"spark worker registering with {master_url}",
                interval=0.5,
            )
        except BaseException:
            self._stop_processes()
            raise
        self._master_url, self._web_ui_url = master_url, web_ui
        return self

    def submit(
        self,
        app: Path,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        timeout: float = 300.0,
        conf: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``spark-submit --master <this cluster> app args`` and wait for it.

        Parameters
        ----------
        app
            The Python application file.
        args
            Its arguments.
        env
            Extra environment for the driver (e.g. ``KAFKA_BOOTSTRAP_SERVERS``).
        timeout
            Seconds before the driver (and its process group) is killed.
        conf
            ``--conf key=value`` settings.

        Returns
        -------
        subprocess.CompletedProcess
            With ``stdout`` and ``stderr`` as text; the caller checks ``returncode``.

        Raises
        ------
        subprocess.TimeoutExpired
            After killing the driver, when it ran longer than ``timeout``.
        """
        argv = [str(self.spark_home / "bin" / "spark-submit"), "--master", self.master_url]
        for key, value in (conf or {}).items():
            argv += ["--conf", f"{key}={value}"]
        argv += [str(app), *args]
        with subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self._env(env),
            start_new_session=True,
            preexec_fn=die_with_parent,
        ) as driver:
            try:
                stdout, stderr = driver.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(driver.pid)
                stdout, stderr = driver.communicate()
                raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr) from None
            finally:
                _kill_group(driver.pid)  # the driver's own children, if any outlive it
        return subprocess.CompletedProcess(argv, driver.returncode, stdout, stderr)

    def _stop_processes(self) -> None:
        for process in (self._worker, self._master):
            if process is not None:
                process.stop(grace=15.0)

    def stop(self) -> None:
        """Stop the worker (and its executors) and the master; idempotent."""
        self._stop_processes()
        started = self._master_url is not None
        self._master_url = self._web_ui_url = None
        if started and not self.keep_logs:
            if self._owns_log_dir:
                shutil.rmtree(self.log_dir, ignore_errors=True)
            else:
                for name in ("master.log", "worker.log"):
                    (self.log_dir / name).unlink(missing_ok=True)
                shutil.rmtree(self.log_dir / "work", ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
