import type { WebhookEvent } from '../api/index.js';

/** The service's id of the order an event is about; `quote` events name none. */
export function orderIdOf(event: WebhookEvent): string | null {
  switch (event.event) {
    case 'order':
      return event.data.id;
    case 'quote':
      return null;
    default:
      return event.data.orderId;
  }
}
