import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

export function ErrorAlert({ message, label }: { message: string | null | undefined; label?: string }) {
  if (!message) return null;
  return (
    <div class="alert" role="alert" aria-label={label}>
      {message}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <p class="muted">Loading {what}…</p>;
}

/**
 * A modal dialog on the native <dialog> element: showModal() makes the rest of the page inert
 * (focus stays inside), Escape closes it, and focus goes back to what had it before.
 */
export function Dialog(props: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  onSubmit?: () => void;
  busy?: boolean;
  confirmLabel?: string;
  confirmClass?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  const close = useRef(props.onClose);
  close.current = props.onClose;
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    const d = ref.current!;
    if (!d.open) d.showModal();
    const onCancel = (e: Event) => {
      e.preventDefault();
      close.current();
    };
    d.addEventListener('cancel', onCancel);
    return () => {
      d.removeEventListener('cancel', onCancel);
      if (d.open) d.close();
      if (opener && opener.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog ref={ref} aria-labelledby={id + '-t'} class="dialog">
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (!props.busy) props.onSubmit?.();
        }}
      >
        <h2 id={id + '-t'}>{props.title}</h2>
        {props.children}
        <div class="buttons">
          {props.onSubmit && (
            <button type="submit" class={props.confirmClass ?? 'primary'} disabled={props.busy}>
              {props.confirmLabel ?? 'Confirm'}
            </button>
          )}
          <button type="button" onClick={() => close.current()}>
            {props.onSubmit ? 'Cancel' : 'Close'}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** A labelled form control; the hint describes the control (aria-describedby). */
export function Field(props: { label: string; children: (id: string) => ComponentChildren; hint?: string }) {
  const id = useId();
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const control = ref.current?.querySelector('#' + CSS.escape(id));
    if (control && props.hint) control.setAttribute('aria-describedby', id + '-hint');
  }, [id, props.hint]);
  return (
    <div class="field" ref={ref}>
      <label for={id}>{props.label}</label>
      {props.children(id)}
      {props.hint && (
        <p class="hint" id={id + '-hint'}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

export function Section(props: { title: string; children: ComponentChildren; id?: string }) {
  const id = useId();
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{props.title}</h2>
      {props.children}
    </section>
  );
}

export function Pre({ value }: { value: unknown }) {
  return <pre class="json">{typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>;
}
