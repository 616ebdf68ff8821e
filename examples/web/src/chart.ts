import { scoreBand } from "./bands.js";
import { dateTimeFormat, shortDateFormat, svg, timeFormat } from "./dom.js";

/** One completed session on the chart. */
export interface ScorePoint {
  at: Date;
  score: number;
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

  const coordinates = points.map((p, i) => `${x(i).toFixed(1)},${y(p.score).toFixed(1)}`);
  if (points.length > 1) {
    const base = y(0).toFixed(1);
    chart.append(
      svg("polygon", {
        points: `${x(0).toFixed(1)},${base} ${coordinates.join(" ")} ${x(points.length - 1).toFixed(1)},${base}`,
        class: "area",
      }),
      svg("polyline", { points: coordinates.join(" "), class: "line" }),
    );
  }
  points.forEach((p, i) => {
    chart.append(
      svg(
        "circle",
        { cx: x(i), cy: y(p.score), r: 4.5, class: `dot band-${scoreBand(p.score).name}` },
        svg("title", {}, `${p.score}% on ${dateTimeFormat.format(p.at)}`),
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

/** The chart in words: its accessible name. */
function describe(points: readonly ScorePoint[]): string {
  const first = points[0];
  const last = points.at(-1);
  if (!first || !last) return "Scores over time: no completed sessions yet";
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
