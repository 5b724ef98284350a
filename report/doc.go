// Package report renders the warehouse as one self-contained HTML page:
// inline CSS and inline SVG charts generated here, no script and no
// external resource (a Content-Security-Policy forbids any), so it opens
// offline and can be mailed as a file. The warehouse is opened read-only
// through OpenWarehouse, with no access to any other file.
//
// The page, top to bottom:
//
//   - Freshness: per installation, how old its data is (current_runs), a
//     failed latest attempt with its error (the data shown is then older
//     than the last attempt), stale data, the runs that are not served
//     (runs.served = false, with runs.problem or the error),
//     installations with no served run at all, and current data whose
//     healthy writer's newest subagent row (writer_health.last_observed_at)
//     is older than WriterStaleAfter when the report is generated: what
//     'kandev-extract health' reports stale.
//   - Per installation, its facts (the data's time range from
//     data_time_range) and six charts, each with an HTML legend, a caption
//     saying what population it is over, links to the reading rules and
//     disclosures that apply, and its numbers as a table (the charts'
//     text alternative, with the SVG's title and description):
//     1. the fan-out distribution: the exact distribution over complete
//     turns on a continuous k axis (empty slots are true zeros), the
//     lower-bound turns apart as "at least k" (never stacked onto the
//     exact ones), and the unknown turns counted apart;
//     2. fan-out over time (fanout_by_period, by week; by month beyond 60
//     weeks): turns by completeness and the average exact fan-out with its
//     n, partial periods outlined, the time after the last turn up to the
//     snapshot hatched as "no data";
//     3. contexts per card by workflow step, each panel over one population:
//     complete cards (exact) and all cards (a lower bound);
//     4. and 5. subagent invocations and average tokens by type, live and
//     backfill apart, averages over measured rows only with their n;
//     6. writer health over time (writer_health_by_period, by day; by week
//     or month beyond 62 periods): periods without a run are no evidence,
//     periods whose runs could not compare are not zero.
//   - Reading rules and Disclosures, each once; charts link to them.
//
// An average or a distribution over fewer than SmallSample (10) turns,
// cards or rows is drawn hatched, or as a hollow point, with its n.
//
// Store text (names, types, errors, raw keys in disclosure texts) is
// escaped, its bidirectional and other control characters replaced by a
// visible ⟦U+XXXX⟧, and isolated in <bdi>, so it cannot reorder the page.
//
// The report names every column it reads, so columns added to the views
// change nothing; views a warehouse built by an older version lacks are
// reported on the page (Data.Missing) instead of failing it.
package report
