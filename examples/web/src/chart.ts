import { scoreBand } from "./bands.js";
import { dateTimeFormat, shortDateFormat, svg, timeFormat } from "./dom.js";

/** One completed session on the chart. */
export interface ScorePoint {
  at: Date;
  score: number;
  /**
   * A review or a practice of the missed questions: a few questions picked
   * because they were hard, so its score is not the quiz's. Drawn apart (a
   * hollow square, off the line) so it never reads as progress on the quiz.
   */
  practice?: boolean;
}

const HEIGHT = 200;
const PAD = { left: 44, right: 16, top: 14, bottom: 30 };

/**
 * Scores over time as an inline SVG, one evenly spaced point per completed
 * session (sessions, not days, are what a learner counts); one image, named in
 * words, for assistive technology. `width`: the CSS width, so text is not scaled.
 */
export function scoreChart(points: readonly ScorePoint[], width = 640): SVGSVGElement {
  const WIDTH = Math.max(280, Math.round(width));
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const x = (i: number) =>
    PAD.left + (points.length === 1 ? plotWidth / 2 : (i / (points.length - 1)) * plotWidth);
  const y = (score: number) => PAD.top + (1 - score / 100) * plotHeight;

  const chart = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-label": describe(points),
    class: "score-chart",
  });

  for (const level of [0, 25, 50, 75, 100]) {
    chart.append(
      svg("line", {
        x1: PAD.left,
        x2: WIDTH - PAD.right,
        y1: y(level),
        y2: y(level),
        class: "grid",
      }),
      svg(
        "text",
        { x: PAD.left - 8, y: y(level) + 4, class: "axis", "text-anchor": "end" },
        `${level}%`,
      ),
    );
  }

  // The line and its area join the whole-quiz sessions only.
  const full = points.flatMap((p, i) => (p.practice ? [] : [i]));
  const coordinates = full.map((i) => `${x(i).toFixed(1)},${y(points[i]?.score ?? 0).toFixed(1)}`);
  const firstFull = full[0];
  const lastFull = full.at(-1);
  if (full.length > 1 && firstFull !== undefined && lastFull !== undefined) {
    const base = y(0).toFixed(1);
    chart.append(
      svg("polygon", {
        points: `${x(firstFull).toFixed(1)},${base} ${coordinates.join(" ")} ${x(lastFull).toFixed(1)},${base}`,
        class: "area",
      }),
      svg("polyline", { points: coordinates.join(" "), class: "line" }),
    );
  }
  points.forEach((p, i) => {
    const title = svg(
      "title",
      {},
      `${p.score}% on ${dateTimeFormat.format(p.at)}${p.practice ? " (review or missed questions)" : ""}`,
    );
    chart.append(
      p.practice
        ? svg(
            "rect",
            { x: x(i) - 4, y: y(p.score) - 4, width: 8, height: 8, class: "dot practice" },
            title,
          )
        : svg(
            "circle",
            { cx: x(i), cy: y(p.score), r: 4.5, class: `dot band-${scoreBand(p.score).name}` },
            title,
          ),
    );
  });

  const first = points[0];
  const last = points.at(-1);
  if (first && last) {
    // All on one day: "Nov 24 … Nov 24" says nothing; the times do.
    const oneDay = shortDateFormat.format(first.at) === shortDateFormat.format(last.at);
    const format = oneDay && points.length > 1 ? timeFormat : shortDateFormat;
    const label = (p: ScorePoint, i: number, anchor: string) =>
      svg(
        "text",
        { x: x(i), y: HEIGHT - 8, class: "axis", "text-anchor": anchor },
        format.format(p.at),
      );
    if (points.length === 1) chart.append(label(first, 0, "middle"));
    else chart.append(label(first, 0, "start"), label(last, points.length - 1, "end"));
  }
  return chart;
}

/** The chart in words: its accessible name; the figures are of the whole-quiz sessions. */
function describe(all: readonly ScorePoint[]): string {
  const points = all.filter((p) => !p.practice);
  const others = all.length - points.length;
  const apart =
    others === 0
      ? ""
      : `; and ${others} ${others === 1 ? "review or practice of missed questions" : "reviews or practices of missed questions"}, drawn apart`;
  return describeFull(points) + apart;
}

function describeFull(points: readonly ScorePoint[]): string {
  const first = points[0];
  const last = points.at(-1);
  if (!first || !last) return "Scores over time: no completed whole-quiz sessions yet";
  if (points.length === 1) {
    return `Scores over time: 1 completed session, ${last.score}% on ${dateTimeFormat.format(last.at)}`;
  }
  const scores = points.map((p) => p.score);
  const average = Math.round(scores.reduce((a, b) => a + b, 0) / scores.length);
  return (
    `Scores over time: ${points.length} completed sessions from ${dateTimeFormat.format(first.at)} ` +
    `to ${dateTimeFormat.format(last.at)}; latest ${last.score}%, best ${Math.max(...scores)}%, ` +
    `average ${average}%`
  );
}
