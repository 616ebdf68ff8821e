/** Small DOM helpers: the page has no framework, so these keep it readable. */

/** The element with this id; the page's markup (index.html) must have it. */
export function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from the page`);
  return found as T;
}

type Child = Node | string;

/**
 * Creates an HTML element: `h("p", { className: "muted" }, "text")`. Text
 * children become text nodes, never markup: prompts and answers are user
 * content.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<Omit<HTMLElementTagNameMap[K], "dataset">> & {
    dataset?: Record<string, string>;
    /** Attributes without a reliable property (`role`, `aria-*`). */
    attrs?: Record<string, string>;
  } = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const { dataset, attrs, ...rest } = props;
  const node = Object.assign(document.createElement(tag), rest);
  if (dataset) Object.assign(node.dataset, dataset);
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

const SVG = "http://www.w3.org/2000/svg";

/** Creates an SVG element with attributes. */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children);
  return node;
}

/** Start times to the second: two sessions a minute apart must look different. */
export const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  dateStyle: "medium",
  timeStyle: "medium",
});

/** Short dates for the chart's axis. */
export const shortDateFormat = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
});

/** Times of day for the chart's axis when all its points are on one day. */
export const timeFormat = new Intl.DateTimeFormat(undefined, {
  hour: "numeric",
  minute: "2-digit",
});

/** A `<time>` element for a date, machine-readable in `datetime`. */
export function timeElement(date: Date, format: Intl.DateTimeFormat = dateTimeFormat) {
  return h("time", { dateTime: date.toISOString() }, format.format(date));
}
